//! What the allocator does with freed memory. The encoder allocates each
//! layer's output afresh (tens of MB for a batch) and frees the previous
//! one; mimalloc hands freed memory back to the OS after a delay, and a
//! later layer page-faults it in again while the kernel zeroes its pages:
//! 23,000 page faults and about 5% of the CPU of `quarry index` on
//! regex-automata util/, against 4,500 when the memory is held (peak RSS
//! 284 MB against 302 MB).
//!
//! Owns: `HeldFreedMemory`, a guard the embedding work holds while it
//! runs. Never: changes how memory is allocated, only when freed memory
//! goes back to the OS.

use std::os::raw::{c_int, c_long};
use std::sync::Mutex;

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

/// How many `HeldFreedMemory` guards live, and the purge delay the first
/// of them replaced.
static HOLDS: Mutex<(usize, c_long)> = Mutex::new((0, 0));

/// While one of these lives, freed memory is kept for reuse instead of
/// being returned to the OS; when the last one is dropped the purge delay
/// is restored and what is held is returned.
#[must_use = "freed memory is held only while the guard lives"]
pub struct HeldFreedMemory(());

impl HeldFreedMemory {
    pub fn new() -> HeldFreedMemory {
        let mut holds = HOLDS.lock().unwrap_or_else(|e| e.into_inner());
        if holds.0 == 0 {
            holds.1 = purge_delay();
            // SAFETY: sets one allocator option; mimalloc reads options on
            // every purge decision, from any thread.
            unsafe { mi_option_set(PURGE_DELAY, -1) }
        }
        holds.0 += 1;
        HeldFreedMemory(())
    }
}

impl Default for HeldFreedMemory {
    fn default() -> Self {
        HeldFreedMemory::new()
    }
}

impl Drop for HeldFreedMemory {
    fn drop(&mut self) {
        let mut holds = HOLDS.lock().unwrap_or_else(|e| e.into_inner());
        holds.0 -= 1;
        if holds.0 == 0 {
            // SAFETY: as in `new`; `mi_collect` is safe to call from any
            // thread at any time.
            unsafe {
                mi_option_set(PURGE_DELAY, holds.1);
                mi_collect(true);
            }
        }
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
    fn the_purge_delay_is_held_while_a_guard_lives() {
        // The option index is right if it reads mimalloc's default purge
        // delay (10 ms in version 2, 1000 ms in 3), unless the environment
        // set one, and follows the guards.
        let before = purge_delay();
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert!(before == 10 || before == 1000, "{before}");
        }
        let outer = HeldFreedMemory::new();
        assert_eq!(purge_delay(), -1);
        // Nested holds: only the last one dropped restores the delay.
        drop(HeldFreedMemory::new());
        assert_eq!(purge_delay(), -1);
        drop(outer);
        assert_eq!(purge_delay(), before);
    }
}
