//! What the allocator does with freed memory. The encoder allocates each
//! layer's output afresh (tens of MB for a batch) and frees the previous
//! one; mimalloc hands freed memory back to the OS after a delay, and a
//! later layer page-faults it in again while the kernel zeroes its pages:
//! 23,000 page faults and about 5% of the CPU of `quarry index` on
//! regex-automata util/, against 4,500 when the memory is held (peak RSS
//! 284 MB against 302 MB).
//!
//! Owns: `hold_freed_memory` and `release_freed_memory`, which the
//! embedding work calls around itself. Never: changes how memory is
//! allocated, only when freed memory goes back to the OS.

use std::os::raw::{c_int, c_long};
use std::sync::atomic::{AtomicI64, Ordering};

// The C library these options belong to is linked through the `mimalloc`
// crate; naming it keeps it linked in every binary that uses this module.
use mimalloc as _;

extern "C" {
    fn mi_option_get(option: c_int) -> c_long;
    fn mi_option_set(option: c_int, value: c_long);
    fn mi_collect(force: bool);
}

/// `mi_option_purge_delay` in `mi_option_t` (the same in the mimalloc 2
/// and 3 that libmimalloc-sys 0.1.49 can build; its Rust bindings do not
/// name this option). A test pins it by its default value.
const PURGE_DELAY: c_int = 15;

/// The purge delay `hold_freed_memory` replaced (`i64::MIN`: none).
static SAVED: AtomicI64 = AtomicI64::new(i64::MIN);

/// Keeps freed memory for reuse instead of returning it to the OS, until
/// `release_freed_memory`.
pub fn hold_freed_memory() {
    let now = purge_delay();
    if now >= 0 {
        // `c_long` is 32 bits on some targets.
        #[allow(clippy::useless_conversion)]
        SAVED.store(i64::from(now), Ordering::Relaxed);
    }
    // SAFETY: sets one allocator option; mimalloc reads options on every
    // purge decision, from any thread.
    unsafe { mi_option_set(PURGE_DELAY, -1) }
}

/// Returns freed memory to the OS again (after the delay held before),
/// and what is held now.
pub fn release_freed_memory() {
    let saved = SAVED.load(Ordering::Relaxed);
    // SAFETY: as `hold_freed_memory`; `mi_collect` is safe to call from
    // any thread at any time.
    unsafe {
        if saved != i64::MIN {
            mi_option_set(PURGE_DELAY, saved as c_long);
        }
        mi_collect(true);
    }
}

/// The purge delay now, in milliseconds (-1: held).
fn purge_delay() -> c_long {
    // SAFETY: reads one allocator option.
    unsafe { mi_option_get(PURGE_DELAY) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_is_the_one_held_and_released() {
        // The option index is right if it reads mimalloc's default purge
        // delay (10 ms in version 2, 1000 ms in 3), unless the environment
        // set one, and follows the two calls.
        let before = purge_delay();
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert!(before == 10 || before == 1000, "{before}");
        }
        hold_freed_memory();
        assert_eq!(purge_delay(), -1);
        release_freed_memory();
        assert_eq!(purge_delay(), before);
    }
}
