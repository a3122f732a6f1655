//! One device as the pipelines use it: a context, an in-order queue (profiling or not), program builds
//! (with the result layout handed to every kernel file), checked buffer allocation, work-group
//! sizes and the profiling times of events.

use ocl::builders::KernelBuilder;
use ocl::enums::{
    DeviceInfo as ClDeviceInfo, DeviceInfoResult, KernelWorkGroupInfo, KernelWorkGroupInfoResult,
    ProfilingInfo, ProgramInfo, ProgramInfoResult,
};
use ocl::flags::{CommandQueueProperties, DeviceFpConfig, MemFlags};
use ocl::{Buffer, Context, Event, Kernel, OclPrm, Program, Queue};

use super::device::{SETUP_LOCK, Selected};
use super::error::OpenClError;
use super::inject::{self, FaultPoint};
use super::profiling::profiling;
use super::record;
use crate::backend::StageTiming;

/// A context and an in-order queue on one device (a profiling queue when `profiling()` was on
/// at its creation).
#[derive(Debug, Clone)]
pub(crate) struct Gpu {
    pub context: Context,
    pub queue: Queue,
    pub selected: Selected,
    pub max_alloc: u64,
    /// Whether this device's queues record device times.
    pub profiling: bool,
}

impl Gpu {
    pub(crate) fn new(selected: Selected) -> Result<Self, OpenClError> {
        let _guard = SETUP_LOCK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let context = Context::builder()
            .platform(selected.platform)
            .devices(selected.device)
            .build()
            .map_err(OpenClError::runtime("create context"))?;
        let profiling = profiling();
        let queue = make_queue(&context, &selected, profiling, "create queue")?;
        let max_alloc = match selected.device.info(ClDeviceInfo::MaxMemAllocSize) {
            Ok(DeviceInfoResult::MaxMemAllocSize(v)) => v,
            _ => u64::MAX,
        };
        Ok(Self {
            context,
            queue,
            selected,
            max_alloc,
            profiling,
        })
    }

    /// The same context and device with a second in-order queue (commands that may overlap
    /// this one's: the stream's matching), profiling as this one.
    pub(crate) fn with_second_queue(&self, what: &'static str) -> Result<Self, OpenClError> {
        Ok(Self {
            queue: self.new_queue(what)?,
            ..self.clone()
        })
    }

    /// Another in-order queue on this context and device, profiling as this one.
    pub(crate) fn new_queue(&self, what: &'static str) -> Result<Queue, OpenClError> {
        make_queue(&self.context, &self.selected, self.profiling, what)
    }

    /// The device time per stage of `events`, commands on this device's queues: empty when
    /// they do not profile ([`set_profiling`]).
    pub(crate) fn stage_timings(
        &self,
        events: &[(&'static str, Event)],
    ) -> Result<Vec<StageTiming>, OpenClError> {
        stage_timings(events, self.profiling)
    }

    /// The device, as "platform / device".
    pub(crate) fn name(&self) -> String {
        format!(
            "{} / {}",
            self.selected.info.platform, self.selected.info.name
        )
    }

    /// Builds one kernel file with the result layout of [`record`] and `defines` as `-D`
    /// options, surfacing the compiler log on failure.
    pub(crate) fn program(
        &self,
        file: &'static str,
        src: &str,
        defines: &[(&str, usize)],
    ) -> Result<Program, OpenClError> {
        let build_error = |log: String| OpenClError::Build {
            file,
            device: self.selected.info.name.clone(),
            log,
        };
        if let Some(log) = inject::check(FaultPoint::Build) {
            return Err(build_error(log));
        }
        let mut options = String::from("-cl-std=CL1.2");
        // Correctly rounded f32 division and sqrt where the device has them: the Newton step,
        // atan2 and the descriptor's normalisation then round as on the CPU.
        if fp32_correctly_rounded(&self.selected) {
            options.push_str(" -cl-fp32-correctly-rounded-divide-sqrt");
        }
        options.push_str(&record::kernel_defines());
        for (name, value) in defines {
            options.push_str(&format!(" -D {name}={value}"));
        }
        // Building programs from several threads at once crashes PoCL 5 (seen as SIGSEGV when
        // the tests run in parallel): builds are serialised process-wide. They happen once per
        // pipeline, so this costs nothing per frame.
        let _guard = SETUP_LOCK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let program = Program::builder()
            .src(src)
            .devices(self.selected.device)
            .cmplr_opt(options)
            .build(&self.context)
            .map_err(|e| build_error(e.to_string()))?;
        if let Some(dir) = std::env::var_os(DUMP_PROGRAMS_ENV) {
            dump_binaries(&program, std::path::Path::new(&dir), file);
        }
        Ok(program)
    }

    /// A builder for kernel `name` of `program` on this device's queue.
    pub(crate) fn kernel<'p>(&self, program: &'p Program, name: &'static str) -> KernelBuilder<'p> {
        let mut b = Kernel::builder();
        b.program(program).name(name).queue(self.queue.clone());
        b
    }

    /// A device buffer of `len` elements (at least 1), with a typed error when it cannot be had.
    pub(crate) fn buffer<T: OclPrm>(
        &self,
        what: &'static str,
        len: usize,
        flags: MemFlags,
    ) -> Result<Buffer<T>, OpenClError> {
        let len = len.max(1);
        let bytes = (len as u64).saturating_mul(std::mem::size_of::<T>() as u64);
        let fail = |message: String| OpenClError::Allocation {
            what,
            bytes,
            message,
        };
        if let Some(message) = inject::check(FaultPoint::Allocate) {
            return Err(fail(message));
        }
        if bytes > self.max_alloc {
            return Err(fail(format!(
                "larger than the device's largest allocation ({} bytes)",
                self.max_alloc
            )));
        }
        Buffer::<T>::builder()
            .queue(self.queue.clone())
            .flags(flags)
            .len(len)
            .build()
            .map_err(|e| fail(e.to_string()))
    }

    /// A read-only device buffer holding `data`.
    pub(crate) fn constant<T: OclPrm>(
        &self,
        what: &'static str,
        data: &[T],
    ) -> Result<Buffer<T>, OpenClError> {
        let buf = self.buffer::<T>(what, data.len(), MemFlags::new().read_only())?;
        buf.write(data)
            .enq()
            .map_err(OpenClError::runtime("upload a table"))?;
        Ok(buf)
    }

    /// The work-group size to use for `kernel`: `wanted` clamped to the device's and the
    /// kernel's limits.
    pub(crate) fn local_size(&self, kernel: &Kernel, wanted: usize) -> usize {
        let kernel_max =
            match kernel.wg_info(self.selected.device, KernelWorkGroupInfo::WorkGroupSize) {
                Ok(KernelWorkGroupInfoResult::WorkGroupSize(n)) if n > 0 => n,
                _ => 1,
            };
        wanted
            .min(kernel_max)
            .min(self.selected.info.max_work_group_size.max(1))
            .max(1)
    }

    /// A kernel whose local memory is sized by its work-group: built by `build` for `wanted`
    /// work-items, and built again for fewer when the device or the kernel allows fewer.
    /// Returns the kernel and its work-group size.
    pub(crate) fn kernel_fitting(
        &self,
        wanted: usize,
        build: impl Fn(usize) -> Result<Kernel, OpenClError>,
    ) -> Result<(Kernel, usize), OpenClError> {
        let kernel = build(wanted)?;
        match self.local_size(&kernel, wanted) {
            size if size == wanted => Ok((kernel, size)),
            size => Ok((build(size)?, size)),
        }
    }

    /// `want` work-items, fewer when a kernel keeping `words` `u32`s per work-item in local
    /// memory would use more than half of it.
    pub(crate) fn fit_local(&self, want: usize, words: usize) -> usize {
        match self.selected.info.local_mem_bytes as usize {
            0 => want,
            local_mem => want.min((local_mem / 2) / (4 * words)).max(1),
        }
    }
}

fn make_queue(
    context: &Context,
    selected: &Selected,
    profiling: bool,
    what: &'static str,
) -> Result<Queue, OpenClError> {
    Queue::new(
        context,
        selected.device,
        profiling.then(|| CommandQueueProperties::new().profiling()),
    )
    .map_err(OpenClError::runtime(what))
}

/// Whether the device rounds `f32` division and square root correctly on request
/// (`-cl-fp32-correctly-rounded-divide-sqrt` is only valid then).
fn fp32_correctly_rounded(selected: &Selected) -> bool {
    matches!(
        selected.device.info(ClDeviceInfo::SingleFpConfig),
        Ok(DeviceInfoResult::SingleFpConfig(c))
            if c.contains(DeviceFpConfig::CORRECTLY_ROUNDED_DIVIDE_SQRT)
    )
}

/// The device time of a completed command, ms.
pub(crate) fn event_ms(event: &Event) -> Result<f64, OpenClError> {
    // Profiling info exists only once the command is complete; a command on another queue
    // (the stream's uploads) may be reported complete a little later than the work after it.
    event
        .wait_for()
        .map_err(|e| OpenClError::runtime("wait for event")(e.into()))?;
    let get = |what| {
        event
            .profiling_info(what)
            .and_then(|r| r.time().map_err(ocl::Error::from))
            .map_err(OpenClError::runtime("read profiling info"))
    };
    let start = get(ProfilingInfo::Start)?;
    let end = get(ProfilingInfo::End)?;
    Ok(end.saturating_sub(start) as f64 / 1e6)
}

/// Sums profiling times per stage, merging consecutive events of one stage; none when the
/// events come from queues that do not profile (`profiling` false: [`Gpu::stage_timings`]).
fn stage_timings(
    events: &[(&'static str, Event)],
    profiling: bool,
) -> Result<Vec<StageTiming>, OpenClError> {
    let mut timings: Vec<StageTiming> = Vec::with_capacity(events.len());
    if !profiling {
        return Ok(timings);
    }
    for (name, ev) in events {
        let ms = event_ms(ev)?;
        match timings.last_mut() {
            Some(t) if t.name == *name => t.ms += ms,
            _ => timings.push(StageTiming {
                name: (*name).to_string(),
                ms,
            }),
        }
    }
    Ok(timings)
}

/// Environment variable naming a folder where every program built is also written as the
/// device's binary (`<build>-<file>.<n>.bin`, `build` counting the process's builds, since a
/// file is built once per pipeline and with different options; PTX text on NVIDIA's OpenCL),
/// for the compiler's own report: `ptxas -arch=sm_90 -v` gives each kernel's registers and
/// stack frame (`scripts/device/ptxas-report.sh`). A development aid: nothing reads the files.
pub(crate) const DUMP_PROGRAMS_ENV: &str = "SURFCL_DUMP_PROGRAMS";

/// Writes `program`'s device binaries into `dir` (see [`DUMP_PROGRAMS_ENV`]). Failures are
/// ignored: the dump is a diagnostic and must not change what a pipeline does.
fn dump_binaries(program: &Program, dir: &std::path::Path, file: &str) {
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let build = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if let Ok(ProgramInfoResult::Binaries(binaries)) = program.info(ProgramInfo::Binaries) {
        for (n, binary) in binaries.iter().enumerate() {
            // NVIDIA's PTX ends with NUL bytes, which ptxas refuses.
            let end = binary.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            let name = format!("{build:03}-{file}.{n}.bin");
            let _ = std::fs::write(dir.join(name), &binary[..end]);
        }
    }
}
