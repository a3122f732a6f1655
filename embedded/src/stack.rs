//! Stack high-water mark: the free stack is filled with a pattern when `main` starts; at the end
//! the lowest word that no longer holds it marks the deepest point the stack reached.
#![allow(unsafe_code)]

/// The paint pattern.
const PAINT: u32 = 0x5eed_c0de;
/// Bytes left unpainted below the painting function's own frame.
const MARGIN: usize = 256;

// Bounds of the stack region, from the runtime crate's linker script: the stack grows down
// from `_stack_start` (the end of RAM) towards the end of the statics.
unsafe extern "C" {
    static _stack_start: u32;
    // The statics (both runtimes' scripts name them so) and the stack reserve of the memory map.
    static __sdata: u32;
    static __edata: u32;
    static __sbss: u32;
    static __ebss: u32;
    static _stack_reserve: u32;
    #[cfg(target_arch = "arm")]
    static _stack_end: u32;
    #[cfg(target_arch = "riscv32")]
    static __estack: u32;
}

/// Lowest and one-past-highest address of the stack region.
fn region() -> (usize, usize) {
    let top = core::ptr::addr_of!(_stack_start) as usize;
    #[cfg(target_arch = "arm")]
    let bottom = core::ptr::addr_of!(_stack_end) as usize;
    #[cfg(target_arch = "riscv32")]
    let bottom = core::ptr::addr_of!(__estack) as usize;
    ((bottom + 3) & !3, top)
}

/// An address just above the current stack pointer (a local's).
#[inline(never)]
fn stack_pointer() -> usize {
    let marker = 0u32;
    core::hint::black_box(core::ptr::addr_of!(marker)) as usize
}

/// Paints the free stack below the caller's frame.
#[inline(never)]
pub fn paint() {
    let (bottom, _) = region();
    let end = stack_pointer().saturating_sub(MARGIN) & !3;
    let mut at = bottom;
    while at < end {
        // SAFETY: [bottom, end) is stack memory below every live frame (the caller's frame and
        // this one are above `end`), word aligned, and owned by nothing else.
        unsafe { core::ptr::write_volatile(at as *mut u32, PAINT) };
        at += 4;
    }
}

/// Bytes between the top of the stack and the deepest overwritten word.
pub fn high_water() -> usize {
    let (bottom, top) = region();
    let mut at = bottom;
    while at < top {
        // SAFETY: `at` is a word-aligned address inside the stack region.
        if unsafe { core::ptr::read_volatile(at as *const u32) } != PAINT {
            break;
        }
        at += 4;
    }
    top - at
}

/// Bytes of the statics: `.data` and `.bss`.
pub fn statics() -> usize {
    let data = core::ptr::addr_of!(__edata) as usize - core::ptr::addr_of!(__sdata) as usize;
    let bss = core::ptr::addr_of!(__ebss) as usize - core::ptr::addr_of!(__sbss) as usize;
    data + bss
}

/// Bytes the memory map reserves for the stack (`_stack_reserve`, a symbol whose address is
/// the size).
pub fn reserve() -> usize {
    core::ptr::addr_of!(_stack_reserve) as usize
}
