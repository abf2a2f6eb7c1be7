//! What a probe process reads about its own memory: the resident set size, and glibc malloc's
//! bytes in use.

/// This process's resident set size in bytes: `/proc/self/statm`'s second field, in pages.
///
/// # Errors
/// The file cannot be read or parsed.
pub fn rss_bytes() -> anyhow::Result<i64> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: i64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("/proc/self/statm: unexpected {statm:?}"))?;
    Ok(pages * rustix::param::page_size() as i64)
}

/// False once the program said its global allocator is not the system's (`uvfs` installs
/// mimalloc): glibc's statistics then describe almost nothing the program allocates.
static SYSTEM_ALLOCATOR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Says whether the program's global allocator is the system's malloc (the default: yes).
/// A program that installs another (`#[global_allocator]`) calls this with `false` before
/// measuring, so that [`malloc_in_use_bytes`] answers `None` instead of a figure that does
/// not move.
pub fn set_global_allocator_is_system(yes: bool) {
    SYSTEM_ALLOCATOR.store(yes, std::sync::atomic::Ordering::Relaxed);
}

/// glibc malloc's bytes in use, over every arena: `mallinfo2()`'s `uordblks` (chunks in use,
/// headers included) plus `hblkhd` (chunks served by their own `mmap`). `None` where malloc is
/// not glibc's.
///
/// It describes the system allocator only: a program that installs another global allocator
/// gets a figure that does not move.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // Reason: mallinfo2 is a foreign function.
pub fn malloc_in_use_bytes() -> Option<i64> {
    if !SYSTEM_ALLOCATOR.load(std::sync::atomic::Ordering::Relaxed) {
        return None;
    }
    // SAFETY: mallinfo2 takes no arguments, returns a struct by value and only reads malloc's
    // own statistics under its arena locks; it is safe to call from any thread at any time.
    let m = unsafe { libc::mallinfo2() };
    Some((m.uordblks + m.hblkhd) as i64)
}

/// glibc malloc's bytes in use: not available with this C library.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn malloc_in_use_bytes() -> Option<i64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: a 64 MiB allocation touched page by page is resident and in use. Both figures
    /// are process-wide and other tests allocate and free at the same time, hence the margin.
    #[test]
    fn a_touched_allocation_shows_in_both() {
        let rss0 = rss_bytes().expect("statm");
        let heap0 = malloc_in_use_bytes();
        let v = vec![1u8; 64 << 20];
        let rss1 = rss_bytes().expect("statm");
        let heap1 = malloc_in_use_bytes();
        std::hint::black_box(&v);
        assert!(rss1 - rss0 >= 60 << 20, "{rss0} -> {rss1}");
        if let (Some(h0), Some(h1)) = (heap0, heap1) {
            assert!(h1 - h0 >= 60 << 20, "{h0} -> {h1}");
        }
    }
}
