//! Names chosen at random: unique without coordination between nodes.

/// 128 random bits as hex: unique names without coordination between nodes.
pub fn random_name() -> String {
    let mut bytes = [0u8; 16];
    // The OS random source failing is not recoverable in any useful way.
    getrandom::fill(&mut bytes).expect("OS random source");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
