//! The allocator of exported policies: a bump arena.
//!
//! Each guest instance serves one call and is then dropped whole, so memory a call frees
//! never needs to be reused by a later call. A bump allocator hands out the next free bytes
//! and frees nothing, except the most recent allocation (a string or list that grows or is
//! dropped at once, which is the common case in lowering and lifting): freeing is a compare,
//! allocating is an add. The general-purpose allocator (`dlmalloc`) spends most of its time
//! keeping free lists that a one-shot instance never reuses.
//!
//! Hand-written rather than a crate's: it must grow linear memory in chunks (a `memory.grow`
//! is a call into the host and a syscall) yet stay within the host's memory cap, falling back
//! to the exact size when a chunk is refused; the arena crates for wasm either free nothing at
//! all or keep free lists.

#![allow(unsafe_code)] // a global allocator is an unsafe trait by definition

use core::alloc::{GlobalAlloc, Layout};
use core::cell::Cell;

#[cfg(target_arch = "wasm32")]
/// Bytes of one WebAssembly page.
const PAGE: usize = 64 * 1024;
#[cfg(target_arch = "wasm32")]
/// Pages asked of the host at a time, so that a call grows its memory a few times, not once
/// per page. Refused chunks fall back to the exact size, so the memory cap is unaffected.
const CHUNK_PAGES: usize = 16;

/// A bump allocator over the linear memory past the data segments.
///
/// Only for a single-threaded guest (wasm32-wasip2 has no threads), and only where the
/// instance is dropped after one call, as weir does.
pub struct Arena {
    /// The next free byte, 0 before the first allocation.
    top: Cell<usize>,
    /// The end of linear memory as last grown.
    end: Cell<usize>,
}

// SAFETY: wasm32-wasip2 guests are single-threaded; no two threads ever share the arena.
unsafe impl Sync for Arena {}

impl Arena {
    /// An arena that starts at the heap base on first use.
    pub const fn new() -> Self {
        Arena {
            top: Cell::new(0),
            end: Cell::new(0),
        }
    }

    /// Starts the arena at the heap base (past the data segments and the stack).
    #[cfg(target_arch = "wasm32")]
    fn start(&self) {
        unsafe extern "C" {
            static __heap_base: u8;
        }
        // The linker defines `__heap_base`; only its address is taken.
        let base = core::ptr::addr_of!(__heap_base) as usize;
        self.top.set(base);
        self.end.set(core::arch::wasm32::memory_size::<0>() * PAGE);
    }

    /// Makes `[top, top + size)` available, growing memory; false when the host refuses.
    #[cfg(target_arch = "wasm32")]
    fn reserve(&self, top: usize, size: usize) -> bool {
        let Some(wanted) = top.checked_add(size) else {
            return false;
        };
        let short = wanted.saturating_sub(self.end.get()).div_ceil(PAGE);
        if short == 0 {
            return true;
        }
        for pages in [short.max(CHUNK_PAGES), short] {
            if core::arch::wasm32::memory_grow::<0>(pages) != usize::MAX {
                self.end.set(self.end.get() + pages * PAGE);
                return true;
            }
        }
        false
    }

    // Natively there is no linear memory to manage: the arena refuses every allocation.
    #[cfg(not(target_arch = "wasm32"))]
    fn start(&self) {}

    #[cfg(not(target_arch = "wasm32"))]
    fn reserve(&self, _top: usize, _size: usize) -> bool {
        false
    }
}

impl Default for Arena {
    fn default() -> Self {
        Self::new()
    }
}

unsafe impl GlobalAlloc for Arena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if self.end.get() == 0 {
            self.start();
        }
        let start = (self.top.get() + layout.align() - 1) & !(layout.align() - 1);
        if start + layout.size() > self.end.get() && !self.reserve(start, layout.size()) {
            return core::ptr::null_mut();
        }
        self.top.set(start + layout.size());
        start as *mut u8
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Only the most recent allocation can be taken back.
        if ptr as usize + layout.size() == self.top.get() {
            self.top.set(ptr as usize);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = ptr as usize;
        if old + layout.size() == self.top.get() {
            // The most recent allocation grows or shrinks in place.
            if new_size <= layout.size() || self.reserve(old, new_size) {
                self.top.set(old + new_size);
                return ptr;
            }
            return core::ptr::null_mut();
        }
        if new_size <= layout.size() {
            return ptr;
        }
        // SAFETY: the caller guarantees a valid layout of `new_size`, as `realloc` requires.
        let new =
            unsafe { self.alloc(Layout::from_size_align_unchecked(new_size, layout.align())) };
        if !new.is_null() {
            // SAFETY: both blocks are live, distinct, and at least `layout.size()` long.
            unsafe { core::ptr::copy_nonoverlapping(ptr, new, layout.size()) };
        }
        new
    }
}
