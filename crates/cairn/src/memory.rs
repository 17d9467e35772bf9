//! Keeping the process's memory near what it uses: glibc's allocator holds on to what is freed
//! unless told otherwise, so a long-running server's resident memory would creep up with every
//! upload whose buffers happened to land differently.

/// glibc raises its mmap threshold each time a large buffer is freed (an import's 16 MiB batch);
/// buffers below that size then come from the heap and stay resident after they are freed, so
/// a server's peak memory grew over its first uploads (26 to 50 MiB over five 1 GiB TUS
/// uploads). A fixed 4 MiB threshold and an arena per core rather than eight keep it near flat
/// (26 to 28 MiB). A lower threshold is flatter still but maps and faults in every body buffer
/// of a few hundred KiB: 128 KiB cost a fifth of TUS throughput.
pub fn keep_freed_memory_returnable() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
        // SAFETY: mallopt only sets allocator parameters; called before any thread starts.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
            libc::mallopt(libc::M_ARENA_MAX, cores as libc::c_int);
        }
    }
}

/// For a server: give freed heap pages back to the kernel every second. glibc returns only the
/// top of each heap by itself; request bodies of many sizes leave free holes below live
/// buffers, and those stayed resident: 9.6 to 18 MiB of anonymous memory at rest over eight
/// 1 GiB TUS uploads, against 9 to 11 MiB with this. A trim walks the free lists of two arenas
/// of a few MiB: well under a millisecond.
pub fn return_freed_memory_every_second() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    std::thread::Builder::new()
        .name("memory-trim".into())
        .spawn(|| loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
            // SAFETY: malloc_trim is thread-safe; it locks each arena while it walks it.
            unsafe { libc::malloc_trim(0) };
        })
        .map(drop)
        .unwrap_or_else(|e| tracing::warn!(error = %e, "starting the memory trimmer failed"));
}
