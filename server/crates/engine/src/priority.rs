//! Thread priority for background work: the threads that parse, hash and
//! embed for the index run at a lower scheduling priority than the ones
//! answering requests, so a query or a `workspace/symbol` keystroke is not
//! queued behind a branch switch's re-indexing on a machine with few cores.
//!
//! Owns: `lower_this_thread`. Never: raises a priority (that needs
//! privileges) or touches a thread other than the calling one.

/// How much lower than a request thread (a `nice` increment).
pub const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's priority by [`BACKGROUND_NICE`]. On Linux a
/// nice value belongs to a thread, so this affects no other thread; where
/// that is not so, or on failure, it does nothing (priority is a hint,
/// never a reason to fail).
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain syscalls on the calling thread; `who = 0` is the
        // caller for PRIO_PROCESS, which Linux applies per thread.
        unsafe {
            let current = libc::getpriority(libc::PRIO_PROCESS, 0);
            let _ = libc::setpriority(libc::PRIO_PROCESS, 0, current + BACKGROUND_NICE);
        }
    }
}

#[cfg(test)]
mod tests {
    #[cfg(target_os = "linux")]
    #[test]
    fn lowers_only_the_calling_thread() {
        let before = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        let inside = std::thread::spawn(|| {
            super::lower_this_thread();
            unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }
        })
        .join()
        .expect("thread");
        let after = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        assert_eq!(inside, (before + super::BACKGROUND_NICE).min(19));
        assert_eq!(after, before, "the caller's priority is untouched");
    }
}
