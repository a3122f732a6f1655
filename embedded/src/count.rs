//! Instructions executed by the detection, counted deterministically under qemu with
//! `-icount shift=0` (one instruction per nanosecond of virtual time; `make firmware-count`).
//!
//! - Arm (mps2): SysTick on the 25 MHz processor clock counts one tick per 40 virtual ns, so
//!   instructions = 40 x ticks (to within 40); its 24-bit counter wraps into an exception that
//!   counts the wraps.
//! - RISC-V: `minstret`, which qemu backs with the instruction counter when icount is on.
//!
//! Without `-icount` the numbers are timings of the host, not counts; the firmware prints them
//! either way and the Makefile target that reads them sets the flag.
#![allow(unsafe_code)]

#[cfg(target_arch = "arm")]
mod arch {
    use core::sync::atomic::{AtomicU32, Ordering};

    const SYST_CSR: *mut u32 = 0xE000_E010 as *mut u32;
    const SYST_RVR: *mut u32 = 0xE000_E014 as *mut u32;
    const SYST_CVR: *mut u32 = 0xE000_E018 as *mut u32;
    const RELOAD: u32 = 0x00FF_FFFF;
    /// Virtual nanoseconds (= instructions with `-icount shift=0`) per tick of the 25 MHz clock.
    const INSTRUCTIONS_PER_TICK: u64 = 40;

    static WRAPS: AtomicU32 = AtomicU32::new(0);

    #[cortex_m_rt::exception]
    fn SysTick() {
        // Load + store: v6-M has no atomic read-modify-write; nothing else writes WRAPS.
        WRAPS.store(WRAPS.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    pub fn start() {
        WRAPS.store(0, Ordering::Relaxed);
        // SAFETY: the architectural SysTick registers of every Cortex-M; nothing else uses them.
        unsafe {
            core::ptr::write_volatile(SYST_RVR, RELOAD);
            core::ptr::write_volatile(SYST_CVR, 0);
            // ENABLE | TICKINT | CLKSOURCE (processor clock).
            core::ptr::write_volatile(SYST_CSR, 0b111);
        }
    }

    pub fn stop() -> u64 {
        // Wraps, counter, wraps again: a wrap between the reads shows as a changed wrap count,
        // and the pair is read again.
        let (current, wraps) = loop {
            let before = WRAPS.load(Ordering::Relaxed);
            // SAFETY: as in `start`.
            let current = unsafe { core::ptr::read_volatile(SYST_CVR) };
            if WRAPS.load(Ordering::Relaxed) == before {
                break (current, before);
            }
        };
        // SAFETY: as in `start`: stop the counter.
        unsafe { core::ptr::write_volatile(SYST_CSR, 0) };
        let ticks = u64::from(wraps) * (u64::from(RELOAD) + 1) + u64::from(RELOAD - current);
        ticks * INSTRUCTIONS_PER_TICK
    }
}

#[cfg(target_arch = "riscv32")]
mod arch {
    static mut START: u64 = 0;

    fn instret() -> u64 {
        riscv::register::minstret::read64()
    }

    pub fn start() {
        // SAFETY: single-threaded firmware; only start/stop touch START.
        unsafe { START = instret() };
    }

    pub fn stop() -> u64 {
        // SAFETY: as above.
        instret().wrapping_sub(unsafe { START })
    }
}

/// Starts counting.
pub fn start() {
    arch::start();
}

/// Instructions since [`start`] (see the module docs for the conditions).
pub fn stop() -> u64 {
    arch::stop()
}
