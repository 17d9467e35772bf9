//! The IPNS record spec's test vectors (ipfs/specs `ipns-record.md`, "Test Vectors"), made by
//! boxo, verified by Cairn: a record another implementation signed is read the same way.

use std::path::Path;
use std::time::SystemTime;

use cairn_p2p::ipns::{Name, Record, RecordError};

fn verify(file: &str) -> Result<Record, RecordError> {
    let bytes = std::fs::read(Path::new("tests/ipns_records").join(file)).unwrap();
    let name: Name = file.split(['_', '.']).next().unwrap().parse().unwrap();
    Record::verify(&name, &bytes, SystemTime::now())
}

#[test]
fn the_specs_test_vectors_verify_as_the_spec_says() {
    let valid = [
        (
            "k51qzi5uqu5dlkw8pxuw9qmqayfdeh4kfebhmreauqdc6a7c3y7d5i9fi8mk9w_v1-v2.ipns-record",
            "/ipfs/bafkqaddwgevxmmraojswg33smq",
        ),
        // Only the V2 signature is valid: V1 is never checked.
        (
            "k51qzi5uqu5dilgf7gorsh9vcqqq4myo6jd4zmqkuy9pxyxi5fua3uf7axph4y_v1-v2-broken-signature-v1.ipns-record",
            "/ipfs/bafkqahtwgevxmmrao5uxi2bamjzg623fnyqhg2lhnzqxi5lsmuqhmmi",
        ),
        (
            "k51qzi5uqu5dit2ku9mutlfgwyz8u730on38kd10m97m36bjt66my99hb6103f_v2.ipns-record",
            "/ipfs/bafkqadtwgiww63tmpeqhezldn5zgi",
        ),
    ];
    for (file, value) in valid {
        assert_eq!(verify(file).expect(file).value, value, "{file}");
    }
    assert_eq!(
        verify("k51qzi5uqu5dm4tm0wt8srkg9h9suud4wuiwjimndrkydqm81cqtlb5ak6p7ku_v1.ipns-record"),
        Err(RecordError::NotV2)
    );
    assert_eq!(
        verify("k51qzi5uqu5dlmit2tuwdvnx4sbnyqgmvbxftl0eo3f33wwtb9gr7yozae9kpw_v1-v2-broken-v1-value.ipns-record"),
        Err(RecordError::Disagrees("value"))
    );
    assert_eq!(
        verify("k51qzi5uqu5diamp7qnnvs1p1gzmku3eijkeijs3418j23j077zrkok63xdm8c_v1-v2-broken-signature-v2.ipns-record"),
        Err(RecordError::BadSignature)
    );
}

#[test]
fn an_rsa_name_verifies_with_the_key_its_record_carries() {
    for file in [
        "QmVujd5Vb7moysJj8itnGufN7MEtPRCNHkKpNuA4onsRa3.ipns-record",
        "12D3KooWLQzUv2FHWGVPXTXSZpdHs7oHbXub2G5WC8Tx4NQhyd2d.ipns-record",
    ] {
        let record = verify(file).expect(file);
        assert!(record.value.starts_with("/ipfs/"), "{file}: {record:?}");
    }
}
