//! The fused distance + 2-NN matcher on an OpenCL device.
//!
//! The kernels (`kernels/match.cl`) compute, per query, the best and second-best distance keys
//! and the best train index exactly as `surfcl_core::matcher` defines them (the `f32` squared
//! distance in the core's 16-lane order, bit for bit; the Q7 distance in integers; ties to the
//! lower index). The train set is split into chunks (one work-group per query tile and chunk,
//! enough to fill the device) whose 2-NN a merge kernel combines in chunk order, which is
//! exactly one sequential pass. With the mutual check, a second launch with the roles swapped gives the nearest
//! query of every train. The few per-query decisions (ratio test, maximum distance, mutual) then
//! run on the host with the core's formulas, so the matches are identical to the CPU's.

use std::time::Instant;

use ocl::flags::MemFlags;
use ocl::prm::Float4;
use ocl::{Buffer, Event, Kernel, OclPrm, Program, Queue};
use surfcl_core::matcher::{KeyKind, Match, MatchConfig, accept_two_nearest};
use surfcl_core::{Descriptor, DescriptorQ7, Keypoint};

use super::device::select;
use super::enqueue::{launch, launch_on};
use super::error::OpenClError;
use super::gpu::Gpu;
use super::inject::{self, FaultPoint};
use crate::backend::StageTiming;

const MATCH_CL: &str = include_str!("../../kernels/match.cl");

/// Per-query 2-NN result: best train index (`u32::MAX`: no compatible train) and the best and
/// second-best distance keys (`u32::MAX` when absent), as the core defines the keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NearestNeighbours {
    /// Best train index per query.
    pub best: Vec<u32>,
    /// Best key per query.
    pub k1: Vec<u32>,
    /// Second-best key per query.
    pub k2: Vec<u32>,
}

/// Timings of one matching call.
#[derive(Debug, Clone, Default)]
pub struct MatchTimings {
    /// Device time per stage (upload, kernels, readback), ms.
    pub stages: Vec<StageTiming>,
    /// Host wall time of the call, ms.
    pub wall_ms: f64,
}

/// Device buffers for one descriptor format, grown on demand.
#[derive(Debug)]
struct Side<T: OclPrm> {
    desc: Buffer<T>,
    sign: Buffer<i8>,
    capacity: usize,
}

/// The OpenCL 2-NN matcher. Buffers grow to the largest sets seen and are then reused.
#[derive(Debug)]
pub struct GpuMatcher {
    gpu: Gpu,
    program: Program,
    local_f32: usize,
    /// Work-group size of the f32 kernel for large query sets (see [`Self::group_size`]).
    wide_f32: usize,
    local_q7: usize,
    f32_sides: Option<Sides<f32>>,
    q7_sides: Option<Sides<i8>>,
    out: Option<(Buffer<u32>, usize)>,
    /// The stream's gather kernel, made on first use.
    gather_kernel: Option<Kernel>,
}

/// The device buffers of the query and the train side for one descriptor type.
type Sides<T> = (Side<T>, Side<T>);

/// Element types the kernels take, with their kernel names.
trait Element: OclPrm {
    const KERNEL: &'static str;
    /// Whether the kernel's local tile is `float4` (16 per descriptor) rather than `T` (64).
    const VEC4_TILE: bool;
    /// What the 2-NN keys of this element type encode.
    const KEY: KeyKind;
    /// The matcher's descriptor buffers for this element type.
    fn sides(m: &mut GpuMatcher) -> &mut Option<Sides<Self>>;
    /// The work-group size of this element type's kernel.
    fn local(m: &GpuMatcher) -> usize;
    /// Its work-group size for large query sets ([`GpuMatcher::group_size`]).
    fn wide(m: &GpuMatcher) -> usize;
}
impl Element for f32 {
    const KERNEL: &'static str = "nn2_f32";
    const VEC4_TILE: bool = true;
    const KEY: KeyKind = KeyKind::F32;
    fn sides(m: &mut GpuMatcher) -> &mut Option<Sides<Self>> {
        &mut m.f32_sides
    }
    fn local(m: &GpuMatcher) -> usize {
        m.local_f32
    }
    fn wide(m: &GpuMatcher) -> usize {
        m.wide_f32
    }
}
impl Element for i8 {
    const KERNEL: &'static str = "nn2_q7";
    const VEC4_TILE: bool = false;
    const KEY: KeyKind = KeyKind::Q7;
    fn sides(m: &mut GpuMatcher) -> &mut Option<Sides<Self>> {
        &mut m.q7_sides
    }
    fn local(m: &GpuMatcher) -> usize {
        m.local_q7
    }
    // Not measured wider: Q7 keeps its size.
    fn wide(m: &GpuMatcher) -> usize {
        m.local_q7
    }
}

impl GpuMatcher {
    /// Makes a matcher on the device chosen by `spec` (an index or a name substring, see
    /// `opencl::open`).
    pub fn open(spec: Option<&str>) -> Result<Self, OpenClError> {
        Self::new(Gpu::new(select(spec)?)?)
    }

    pub(crate) fn new(gpu: Gpu) -> Result<Self, OpenClError> {
        let program = gpu.program("match.cl", MATCH_CL, &[])?;
        let local_mem = gpu.selected.info.local_mem_bytes as usize;
        // A tile holds `local` descriptors plus their signs, and the kernels order `local`
        // queries by sign (a class byte and a 16-bit slot each); keep a little local memory
        // spare.
        let fit = |bytes_per: usize, most: usize| {
            if local_mem == 0 {
                64
            } else {
                (local_mem.saturating_sub(256) / bytes_per).clamp(1, most)
            }
        };
        let max_wg = gpu.selected.info.max_work_group_size.max(1);
        let local_f32 = fit(64 * 4 + 4, 64).min(max_wg);
        Ok(Self {
            local_f32,
            // Never below the base size (a device with little local memory or small groups).
            wide_f32: fit(64 * 4 + 4, 128).min(max_wg).max(local_f32),
            local_q7: fit(64 + 4, 64).min(max_wg),
            gpu,
            program,
            f32_sides: None,
            q7_sides: None,
            out: None,
            gather_kernel: None,
        })
    }

    /// Submits the commands enqueued so far on the matcher's queue to the device.
    pub(crate) fn flush(&self) -> Result<(), OpenClError> {
        self.gpu
            .queue
            .flush()
            .map_err(OpenClError::runtime("flush matcher queue"))
    }

    /// Waits for every command enqueued on the matcher's queue.
    pub(crate) fn finish(&self) -> Result<(), OpenClError> {
        self.gpu
            .queue
            .finish()
            .map_err(OpenClError::runtime("wait for matcher queue"))
    }

    /// The device, as "platform / device".
    pub fn device_name(&self) -> String {
        format!(
            "{} / {}",
            self.gpu.selected.info.platform, self.gpu.selected.info.name
        )
    }

    fn side<T: OclPrm>(gpu: &Gpu, len: usize) -> Result<Side<T>, OpenClError> {
        let ro = MemFlags::new().read_only();
        Ok(Side {
            desc: gpu.buffer::<T>("descriptors", len * 64, ro)?,
            sign: gpu.buffer::<i8>("laplacian signs", len, ro)?,
            capacity: len,
        })
    }

    fn ensure_out(&mut self, words: usize) -> Result<(), OpenClError> {
        if self.out.as_ref().is_none_or(|(_, cap)| *cap < words) {
            let buf =
                self.gpu
                    .buffer::<u32>("match results", words, MemFlags::new().read_write())?;
            self.out = Some((buf, words));
        }
        Ok(())
    }

    /// Splits the train set into chunks so that (query groups x chunks) work-groups fill the
    /// device: returns (chunks, chunk length, query groups). The chunk length is a multiple of
    /// the tile (`local`) so that every tile but the last is full.
    fn plan(&self, nq: usize, nt: usize, local: usize) -> (usize, usize, usize) {
        let qgroups = nq.div_ceil(local).max(1);
        let target = self.gpu.selected.info.compute_units.max(1) as usize * 8;
        let max_chunks = nt.div_ceil(local).max(1);
        let chunks = target.div_ceil(qgroups).clamp(1, max_chunks);
        let chunk_len = nt.div_ceil(chunks).div_ceil(local).max(1) * local;
        (nt.div_ceil(chunk_len).max(1), chunk_len, qgroups)
    }

    /// The element type's work-group size for `nq` queries: the f32 kernel takes groups of 128
    /// once there are enough queries for a 128-query group on every half compute unit (larger
    /// groups pay off only on large sets; smaller sets are faster with 64: docs/BENCHMARKS.md).
    /// Results do not depend on it.
    fn group_size<T: Element>(&self, nq: usize) -> usize {
        let cus = self.gpu.selected.info.compute_units.max(1) as usize;
        if nq >= 64 * cus {
            T::wide(self)
        } else {
            T::local(self)
        }
    }

    /// Words of scratch the chunked 2-NN of `nq x nt` needs besides its result.
    fn partial_words<T: Element>(&self, nq: usize, nt: usize) -> usize {
        let (chunks, _, _) = self.plan(nq, nt, self.group_size::<T>(nq));
        if chunks > 1 { 3 * chunks * nq } else { 0 }
    }

    /// Enqueues the 2-NN of `na` entries of `a` against `nb` of `b`: the result (3 words per
    /// query) at `out[base..]`, per-chunk partial results at `out[part_base..]` when the train
    /// set is split (then merged by `nn2_merge`).
    #[allow(clippy::too_many_arguments)]
    fn enqueue_nn2<T: Element>(
        &self,
        a: (&Buffer<T>, &Buffer<i8>, usize),
        b: (&Buffer<T>, &Buffer<i8>, usize),
        out: &Buffer<u32>,
        base: usize,
        part_base: usize,
        name: &'static str,
        events: &mut Vec<(&'static str, Event)>,
    ) -> Result<(), OpenClError> {
        let (na, nb) = (a.2, b.2);
        if na == 0 {
            return Ok(());
        }
        let local = self.group_size::<T>(na);
        let (chunks, chunk_len, qgroups) = self.plan(na, nb, local);
        let target = if chunks > 1 { part_base } else { base };
        let mut builder = Kernel::builder();
        builder
            .program(&self.program)
            .name(T::KERNEL)
            .queue(self.gpu.queue.clone())
            .arg(a.0)
            .arg(a.1)
            .arg(na as u32)
            .arg(b.0)
            .arg(b.1)
            .arg(nb as u32)
            .arg(out)
            .arg(target as u32)
            .arg(chunk_len as u32)
            .arg(qgroups as u32);
        if T::VEC4_TILE {
            builder.arg_local::<Float4>(local * 16);
        } else {
            builder.arg_local::<T>(local * 64);
        }
        let k = builder
            .arg_local::<i8>(local)
            .arg_local::<u8>(local)
            .arg_local::<u16>(local)
            .build()
            .map_err(OpenClError::runtime("build matcher kernel"))?;
        let mut ev = Event::empty();
        launch(&k, qgroups * chunks * local, local, &mut ev)?;
        events.push((name, ev));
        if chunks > 1 {
            let m = Kernel::builder()
                .program(&self.program)
                .name("nn2_merge")
                .queue(self.gpu.queue.clone())
                .arg(out)
                .arg(part_base as u32)
                .arg(na as u32)
                .arg(chunks as u32)
                .arg(out)
                .arg(base as u32)
                .build()
                .map_err(OpenClError::runtime("build matcher kernel"))?;
            let mut ev = Event::empty();
            launch(&m, na, 64, &mut ev)?;
            events.push((name, ev));
        }
        Ok(())
    }

    /// Enqueues the 2-NN kernels on descriptors already on the device (`a` queries, `b`
    /// trains): the forward result and, with `reverse`, the nearest query of every train, into
    /// the result buffer (read by [`Self::read_device`]).
    fn enqueue_device<T: Element>(
        &mut self,
        a: (&Buffer<T>, &Buffer<i8>, usize),
        b: (&Buffer<T>, &Buffer<i8>, usize),
        reverse: bool,
        events: &mut Vec<(&'static str, Event)>,
    ) -> Result<(), OpenClError> {
        let (nq, nt) = (a.2, b.2);
        let words = 3 * (nq + if reverse { nt } else { 0 });
        let part = self.partial_words::<T>(nq, nt).max(if reverse {
            self.partial_words::<T>(nt, nq)
        } else {
            0
        });
        self.ensure_out((words + part).max(1))?;
        let Some((out, _)) = self.out.as_ref() else {
            return Err(OpenClError::Unsupported("no result buffer".into()));
        };
        self.enqueue_nn2(a, b, out, 0, words, "match_2nn", events)?;
        if reverse && nt > 0 {
            self.enqueue_nn2(b, a, out, 3 * nq, words, "match_reverse", events)?;
        }
        Ok(())
    }

    /// Reads back (blocking) what [`Self::enqueue_device`] computed for `nq` queries and `nt`
    /// trains, and appends the device time of `events` to `timings`.
    fn read_device(
        &self,
        nq: usize,
        nt: usize,
        reverse: bool,
        mut events: Vec<(&'static str, Event)>,
        timings: &mut Vec<StageTiming>,
    ) -> Result<(NearestNeighbours, Option<NearestNeighbours>), OpenClError> {
        let words = 3 * (nq + if reverse { nt } else { 0 });
        inject::runtime(FaultPoint::Readback, "read back matches")?;
        let mut host = vec![0u32; words];
        if words > 0 {
            let Some((out, _)) = self.out.as_ref() else {
                return Err(OpenClError::Unsupported("no result buffer".into()));
            };
            let mut ev = Event::empty();
            out.read(&mut host)
                .queue(&self.gpu.queue)
                .enew(&mut ev)
                .enq()
                .map_err(OpenClError::runtime("read back matches"))?;
            events.push(("readback", ev));
        }
        timings.extend(self.gpu.stage_timings(&events)?);
        let split = |words: &[u32]| NearestNeighbours {
            best: words.chunks_exact(3).map(|c| c[0]).collect(),
            k1: words.chunks_exact(3).map(|c| c[1]).collect(),
            k2: words.chunks_exact(3).map(|c| c[2]).collect(),
        };
        let fwd = split(&host[..3 * nq]);
        let rev = reverse.then(|| split(&host[3 * nq..]));
        Ok((fwd, rev))
    }

    /// [`Self::enqueue_device`] then [`Self::read_device`].
    fn run_device<T: Element>(
        &mut self,
        a: (&Buffer<T>, &Buffer<i8>, usize),
        b: (&Buffer<T>, &Buffer<i8>, usize),
        reverse: bool,
        mut events: Vec<(&'static str, Event)>,
        timings: &mut Vec<StageTiming>,
    ) -> Result<(NearestNeighbours, Option<NearestNeighbours>), OpenClError> {
        self.enqueue_device(a, b, reverse, &mut events)?;
        self.read_device(a.2, b.2, reverse, events, timings)
    }

    /// Uploads flat descriptors (`64` per entry) and signs, then runs [`Self::run_device`].
    fn run<T: Element>(
        &mut self,
        sides: (&Side<T>, &Side<T>),
        query: (&[T], &[i8]),
        train: (&[T], &[i8]),
        reverse: bool,
        timings: &mut Vec<StageTiming>,
    ) -> Result<(NearestNeighbours, Option<NearestNeighbours>), OpenClError> {
        let mut events: Vec<(&'static str, Event)> = Vec::new();
        inject::runtime(FaultPoint::Upload, "upload descriptors")?;
        let up = |e: ocl::Error| OpenClError::runtime("upload descriptors")(e);
        for (side, (desc, sign)) in [(sides.0, query), (sides.1, train)] {
            if !sign.is_empty() {
                let mut ev = Event::empty();
                side.desc.write(desc).enew(&mut ev).enq().map_err(up)?;
                events.push(("upload", ev));
                let mut ev = Event::empty();
                side.sign.write(sign).enew(&mut ev).enq().map_err(up)?;
                events.push(("upload", ev));
            }
        }
        self.run_device(
            (&sides.0.desc, &sides.0.sign, query.1.len()),
            (&sides.1.desc, &sides.1.sign, train.1.len()),
            reverse,
            events,
            timings,
        )
    }

    /// Enqueues on `queue`, after the events of `wait`, the copy of the descriptors and signs
    /// of the kept records of a result buffer (at most `n`: the count is read on the device from
    /// the header) into `dst` (device to device).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn gather(
        &mut self,
        queue: &Queue,
        result: &Buffer<u32>,
        n: usize,
        sign_test: bool,
        dst: (&Buffer<f32>, &Buffer<i8>),
        wait: &[Event],
        events: &mut Vec<(&'static str, Event)>,
    ) -> Result<(), OpenClError> {
        if n == 0 {
            return Ok(());
        }
        if dst.1.len() < n || dst.0.len() < 64 * n {
            return Err(OpenClError::Unsupported(format!(
                "{n} descriptors for a {}-entry buffer",
                dst.1.len()
            )));
        }
        // Made once and re-pointed per frame: creating a kernel object costs more than the
        // gather itself on a GPU.
        let k = match self.gather_kernel.take() {
            Some(k) => {
                k.set_arg(0, result)
                    .and_then(|_| k.set_arg(1, n as u32))
                    .and_then(|_| k.set_arg(2, i32::from(sign_test)))
                    .and_then(|_| k.set_arg(3, dst.0))
                    .and_then(|_| k.set_arg(4, dst.1))
                    .map_err(OpenClError::runtime("set gather arguments"))?;
                k
            }
            None => Kernel::builder()
                .program(&self.program)
                .name("gather_records")
                .queue(self.gpu.queue.clone())
                .arg(result)
                .arg(n as u32)
                .arg(i32::from(sign_test))
                .arg(dst.0)
                .arg(dst.1)
                .build()
                .map_err(OpenClError::runtime("build gather kernel"))?,
        };
        let mut ev = Event::empty();
        let launched = launch_on(&k, Some(queue), 64 * n, 256, wait, &mut ev);
        self.gather_kernel = Some(k);
        launched?;
        events.push(("gather", ev));
        Ok(())
    }

    /// Enqueues the matching of `f32` descriptors already on the device (`query` and `train`:
    /// descriptors, signs, count) with the semantics of `surfcl_core::matcher::match_f32`; the
    /// matches come from [`Self::finish_device_f32`] with the same counts and configuration.
    pub(crate) fn enqueue_device_f32(
        &mut self,
        query: (&Buffer<f32>, &Buffer<i8>, usize),
        train: (&Buffer<f32>, &Buffer<i8>, usize),
        config: &MatchConfig,
        events: &mut Vec<(&'static str, Event)>,
    ) -> Result<(), OpenClError> {
        config
            .validate()
            .map_err(|e| OpenClError::Unsupported(format!("matcher configuration: {e}")))?;
        self.enqueue_device(query, train, config.cross_check, events)
    }

    /// Waits for what [`Self::enqueue_device_f32`] enqueued and makes the matches.
    pub(crate) fn finish_device_f32(
        &self,
        counts: (usize, usize),
        config: &MatchConfig,
        events: Vec<(&'static str, Event)>,
        timings: &mut Vec<StageTiming>,
    ) -> Result<Vec<Match>, OpenClError> {
        let (fwd, rev) =
            self.read_device(counts.0, counts.1, config.cross_check, events, timings)?;
        Ok(decide(&fwd, rev.as_ref(), config, KeyKind::F32))
    }

    /// The raw 2-NN of `f32` descriptors (signs: 0 = compatible with anything), with the
    /// reverse nearest queries when `reverse`.
    pub fn nearest_f32(
        &mut self,
        query: &[Descriptor],
        query_signs: &[i8],
        train: &[Descriptor],
        train_signs: &[i8],
        reverse: bool,
        timings: &mut Vec<StageTiming>,
    ) -> Result<(NearestNeighbours, Option<NearestNeighbours>), OpenClError> {
        self.nearest_of((query, query_signs), (train, train_signs), reverse, timings)
    }

    /// The raw 2-NN of Q7 descriptors (see [`GpuMatcher::nearest_f32`]).
    pub fn nearest_q7(
        &mut self,
        query: &[DescriptorQ7],
        query_signs: &[i8],
        train: &[DescriptorQ7],
        train_signs: &[i8],
        reverse: bool,
        timings: &mut Vec<StageTiming>,
    ) -> Result<(NearestNeighbours, Option<NearestNeighbours>), OpenClError> {
        self.nearest_of((query, query_signs), (train, train_signs), reverse, timings)
    }

    /// The 2-NN of descriptors of either element type, with their signs.
    fn nearest_of<T: Element>(
        &mut self,
        query: (&[[T; 64]], &[i8]),
        train: (&[[T; 64]], &[i8]),
        reverse: bool,
        timings: &mut Vec<StageTiming>,
    ) -> Result<(NearestNeighbours, Option<NearestNeighbours>), OpenClError> {
        check_lengths(query.0.len(), query.1.len(), train.0.len(), train.1.len())?;
        let (q, t) = (query.0.as_flattened(), train.0.as_flattened());
        self.nearest(T::sides, (q, query.1), (t, train.1), reverse, timings)
    }

    fn nearest<T: Element>(
        &mut self,
        slot: fn(&mut Self) -> &mut Option<Sides<T>>,
        query: (&[T], &[i8]),
        train: (&[T], &[i8]),
        reverse: bool,
        timings: &mut Vec<StageTiming>,
    ) -> Result<(NearestNeighbours, Option<NearestNeighbours>), OpenClError> {
        let need = ((query.0.len() / 64).max(1), (train.0.len() / 64).max(1));
        if slot(self)
            .as_ref()
            .is_none_or(|(a, b)| a.capacity < need.0 || b.capacity < need.1)
        {
            let sides = (
                Self::side(&self.gpu, need.0)?,
                Self::side(&self.gpu, need.1)?,
            );
            *slot(self) = Some(sides);
        }
        // Taken out for the run (which borrows `self` mutably) and put back afterwards.
        let sides = slot(self).take();
        let result = match &sides {
            Some((a, b)) => self.run((a, b), query, train, reverse, timings),
            None => Err(OpenClError::Unsupported("no descriptor buffers".into())),
        };
        *slot(self) = sides;
        result
    }

    /// Matches `f32` descriptors with the semantics of `surfcl_core::matcher::match_f32`.
    pub fn match_f32(
        &mut self,
        query_kps: &[Keypoint],
        query: &[Descriptor],
        train_kps: &[Keypoint],
        train: &[Descriptor],
        config: &MatchConfig,
        timings: &mut MatchTimings,
    ) -> Result<Vec<Match>, OpenClError> {
        self.match_of((query_kps, query), (train_kps, train), config, timings)
    }

    /// Matches Q7 descriptors with the semantics of `surfcl_core::matcher::match_q7`.
    pub fn match_q7(
        &mut self,
        query_kps: &[Keypoint],
        query: &[DescriptorQ7],
        train_kps: &[Keypoint],
        train: &[DescriptorQ7],
        config: &MatchConfig,
        timings: &mut MatchTimings,
    ) -> Result<Vec<Match>, OpenClError> {
        self.match_of((query_kps, query), (train_kps, train), config, timings)
    }

    /// Matches descriptors of either element type: the device's 2-NN, then the core's
    /// decisions.
    fn match_of<T: Element>(
        &mut self,
        query: (&[Keypoint], &[[T; 64]]),
        train: (&[Keypoint], &[[T; 64]]),
        config: &MatchConfig,
        timings: &mut MatchTimings,
    ) -> Result<Vec<Match>, OpenClError> {
        let t0 = Instant::now();
        let (qs, ts) = signs(query.0, train.0, config)?;
        let reverse = config.cross_check;
        let (fwd, rev) =
            self.nearest_of((query.1, &qs), (train.1, &ts), reverse, &mut timings.stages)?;
        let out = decide(&fwd, rev.as_ref(), config, T::KEY);
        timings.wall_ms = t0.elapsed().as_secs_f64() * 1e3;
        Ok(out)
    }
}

fn check_lengths(q: usize, qs: usize, t: usize, ts: usize) -> Result<(), OpenClError> {
    if q != qs || t != ts {
        return Err(OpenClError::Unsupported(format!(
            "{q} query descriptors with {qs} signs, {t} train descriptors with {ts} signs"
        )));
    }
    if q >= u32::MAX as usize || t >= u32::MAX as usize {
        return Err(OpenClError::Unsupported("too many descriptors".into()));
    }
    Ok(())
}

/// The Laplacian signs the kernels compare: the keypoints' signs, or all 0 (compatible with
/// anything) when the sign test is off.
fn signs(
    query: &[Keypoint],
    train: &[Keypoint],
    config: &MatchConfig,
) -> Result<(Vec<i8>, Vec<i8>), OpenClError> {
    config
        .validate()
        .map_err(|e| OpenClError::Unsupported(format!("matcher configuration: {e}")))?;
    let get = |k: &[Keypoint]| {
        k.iter()
            .map(|p| if config.sign_test { p.laplacian } else { 0 })
            .collect()
    };
    Ok((get(query), get(train)))
}

/// The core's per-query decisions on the device's 2-NN: no candidate, ratio test and maximum
/// distance through `surfcl_core::matcher::accept_two_nearest`, then the mutual check.
fn decide(
    fwd: &NearestNeighbours,
    rev: Option<&NearestNeighbours>,
    config: &MatchConfig,
    metric: KeyKind,
) -> Vec<Match> {
    let mut out = Vec::new();
    for q in 0..fwd.best.len() {
        let (t, k1, k2) = (fwd.best[q], fwd.k1[q], fwd.k2[q]);
        if t == u32::MAX {
            continue;
        }
        let Some(distance) = accept_two_nearest(metric, k1, k2, config) else {
            continue;
        };
        if rev.is_some_and(|rev| rev.best.get(t as usize) != Some(&(q as u32))) {
            continue;
        }
        out.push(Match {
            query: q as u32,
            train: t,
            distance,
        });
    }
    out
}
