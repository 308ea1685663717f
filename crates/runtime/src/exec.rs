//! Compiled programs and running them.
//!
//! [`build`] takes a def with its sizes bound through the whole native
//! path: lowering, the pass pipeline, C emission, and the compiled-kernel
//! cache, which compiles the program's translation units on a miss, in
//! parallel. The result, an [`Executable`], holds
//! the loaded steps and the memory [`Plan`]. [`Executable::run`] runs the
//! steps in order on a [`State`] (the slots of memory): a `#parallel` step
//! as partitions of its parallel index, a few per thread of the rayon pool,
//! all at once; every other step whole; a library matmul through
//! [`crate::matmul`]. A run too small to gain from the pool (a few
//! microseconds of work, less than waking it costs) runs every step whole
//! on the calling thread instead ([`Placement`]). A temporary's slot is zeroed before the first step
//! that touches it, because a new tensor starts as zeros and its slot may
//! hold another temporary's values, unless that step stores every element
//! before reading any (the `overwrite` pass tagged it). A step that only stores zero into every
//! element of a library matmul's output, just before the matmul, is skipped
//! and the matmul overwrites the output instead of accumulating onto it.
//! A step the `view` pass tagged (a reshape: its result holds its input's
//! elements in the same row-major order) is skipped too, its result
//! sharing its input's slot, when nothing writes either afterwards.
//!
//! Callers' tensors are bound without copies ([`Executable::bind`]): a
//! contiguous tensor's buffer becomes its parameter's slot as it is (the
//! steps only read parameters), and a result is handed out as a tensor
//! over its slot ([`Executable::output`]); a slot a caller still holds is
//! replaced, not overwritten, before the next run writes it.
//!
//! Guarantees: a run computes what the kernel VM computes on the kernel
//! (the C backend's guarantee), so what the interpreter computes up to
//! float reassociation; errors (a failing step) are values naming the step.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codegen::cache::KernelCache;
use codegen::emit::CProgram;
use codegen::load::Kernel;
use ir::{DType, Program, Value};
use kernel::{Block, StmtKind, Target, Verify};
use tensor::{Buffer, Element, Tensor};

use crate::band::{self, BandSpec};
use crate::cost;
use crate::matmul::{self, MatmulSpec};
use crate::plan::Plan;
use crate::saved;

/// How to compile.
#[derive(Clone, Debug)]
pub struct Options {
    /// The pass pipeline, by pass name.
    pub passes: Vec<String>,
    pub target: Target,
    pub verify: Verify,
    /// Run (batched) matmuls with the matmul library ([`crate::matmul`])
    /// instead of generated code.
    pub library: bool,
    /// The kernel options the passes take instead of their cost models'
    /// choices (`kernel::options`; empty: every choice the models').
    pub kernel_options: kernel::Options,
}

/// A def compiled for concrete sizes and loaded.
#[derive(Debug)]
pub struct Executable {
    /// The kernel after the pipeline.
    pub block: Block,
    /// The generated C and its interface.
    pub c: CProgram,
    pub plan: Plan,
    kernel: Kernel,
    /// Per step: floating-point operations and bytes of the buffers it
    /// touches.
    pub step_flops: Vec<u64>,
    pub step_bytes: Vec<u64>,
    /// For each step, the temporaries whose life starts there.
    fresh: Vec<Vec<usize>>,
    /// For each step, the product the library runs instead of its C.
    library: Vec<Option<Library>>,
    /// For each step, its partitions per thread of the pool (a parallel
    /// step's; a library matmul's chunks).
    partitions: Vec<u64>,
    /// Steps not run, and why.
    skip: Vec<Skip>,
    /// The shapes of the def's tensor parameters and results.
    shapes: HashMap<String, Vec<usize>>,
    /// For each root buffer, whether it is a parameter (bound by the
    /// caller, so never replaced before a run).
    param: Vec<bool>,
    /// Where [`Executable::run`] runs the steps.
    placement: Placement,
}

/// A step the matmul library runs.
#[derive(Clone, Debug)]
enum Library {
    Matmul(MatmulSpec),
    Band(BandSpec),
}

impl Library {
    /// The root buffers of A, B and C.
    fn buffers(&self) -> [usize; 3] {
        match self {
            Library::Matmul(s) => [s.a.buffer, s.b.buffer, s.c.buffer],
            Library::Band(s) => [s.a.buffer, s.b.buffer, s.c.buffer],
        }
    }

    /// The output's root buffer and how many of its elements the product
    /// writes (all of them, over every batch point, when that is its
    /// length: C's layout is injective).
    fn output(&self) -> (usize, u64) {
        match self {
            Library::Matmul(s) => (s.c.buffer, s.m * s.n * s.batch_points()),
            Library::Band(s) => (s.c.buffer, s.rows * s.width * s.batch_points()),
        }
    }
}

/// Whether a step runs.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Skip {
    Run,
    /// A zero fill of a matmul's output that the matmul overwrites whole
    /// instead of accumulating onto.
    Fill,
    /// A copy whose result is a view of its input (named): the two share
    /// a slot.
    View(String),
}

/// Where a run's steps execute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// On the calling thread, every step whole: no thread of any pool is
    /// woken.
    Here,
    /// On a worker of the current rayon pool, parallel steps split over
    /// its threads.
    Pool,
}

/// A run doing at most this many floating-point operations, and touching
/// at most [`HERE_BYTES`] bytes over all its steps, runs on the calling
/// thread: handing a run to the pool and back costs tens of microseconds
/// (a worker wakes, then the caller), more than such a run takes on one
/// core (about 13 µs at 20 GFLOP/s).
const HERE_FLOPS: u64 = 1 << 18;

/// The bytes bound of [`HERE_FLOPS`]: 256 KiB stay in one core's L2, read
/// in about 13 µs at 20 GB/s.
const HERE_BYTES: u64 = 1 << 18;

/// Why [`build`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// Lowering refused the def: a form not lowered yet, or a program
    /// error it finds (an `=` reading out of bounds).
    Lower(kernel::LowerError),
    /// A pass, the emitter or the loader failed on a kernel that lowered:
    /// a bug in tessera.
    Internal(String),
    /// The kernel cache or the C compiler could not be used.
    Environment(String),
    /// A buffer is larger than the cap on tensor sizes
    /// ([`tensor::max_elements`]): a program error, found before anything
    /// is compiled or allocated.
    TooLarge(String),
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::Lower(e) => write!(f, "cannot lower: {e}"),
            BuildError::Internal(m) => write!(f, "internal error: {m}"),
            BuildError::Environment(m) | BuildError::TooLarge(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for BuildError {}

/// Compiles def `def` of `program` for `sizes` (sizes and integer scalars).
pub fn build(
    program: &Program,
    def: &str,
    sizes: &HashMap<String, i64>,
    options: &Options,
    cache: &KernelCache,
) -> Result<Executable, BuildError> {
    let shapes = interface_shapes(program, def, sizes)?;
    let params: Vec<&str> = program
        .def(def)
        .map(|d| d.params.iter().map(ir::Param::name).collect())
        .unwrap_or_default();
    let key = saved::key(program, def, sizes, options);
    let (block, fresh) = match saved::load(cache, &key) {
        Some(block) => (block, false),
        None => (optimize(program, def, sizes, options)?, true),
    };
    // Both kernels are verified: `optimize` verified the one it made, and
    // a saved one is a copy, read back intact, of one it made. A new one is
    // saved while it is emitted.
    let emit = || codegen::emit::emit_c_verified(&block, "tsr");
    let c = if fresh {
        rayon::join(|| saved::save(cache, &key, &block), emit).1
    } else {
        emit()
    }
    .map_err(|e| BuildError::Internal(format!("cannot emit C: {e}")))?;
    for b in &c.buffers {
        tensor::check_elements(&b.name, None, Some(b.len)).map_err(BuildError::TooLarge)?;
    }
    // The units compile in parallel, each cached on its own.
    let sources: Vec<&str> = c.units.iter().map(|u| u.source.as_str()).collect();
    let libs = cache
        .get_all(&sources, &options.target.codegen_text())
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| match e {
            codegen::cache::CacheError::Compile(m) => {
                BuildError::Internal(format!("the C compiler rejected generated code: {m}"))
            }
            e => BuildError::Environment(e.to_string()),
        })?;
    let kernel = Kernel::from_units(libs, &c).map_err(BuildError::Internal)?;
    let views = views(&block, &c);
    let plan = Plan::new(&c.buffers, &c.steps, &views);
    let mut step_flops = Vec::new();
    let mut step_bytes = Vec::new();
    for (s, info) in block.stmts.iter().zip(&c.steps) {
        step_flops.push(match &s.kind {
            StmtKind::Block(b) => cost::flops(b),
            _ => 0,
        });
        let mut touched: Vec<usize> = info.reads.iter().chain(&info.writes).copied().collect();
        touched.sort_unstable();
        touched.dedup();
        step_bytes.push(touched.iter().map(|&b| c.buffers[b].bytes as u64).sum());
    }
    let mut fresh = vec![Vec::new(); c.steps.len()];
    for (b, info) in c.buffers.iter().enumerate() {
        if !info.temp || info.overwritten || views[b].is_some() {
            continue;
        }
        if let Some(k) = c
            .steps
            .iter()
            .position(|s| s.reads.contains(&b) || s.writes.contains(&b))
        {
            fresh[k].push(b);
        }
    }
    let library: Vec<Option<Library>> = block
        .stmts
        .iter()
        .map(|s| match &s.kind {
            StmtKind::Block(b) if b.is_library() && b.tags.contains("band") => {
                band::spec(b, &block).map(Library::Band)
            }
            StmtKind::Block(b) if b.is_library() => matmul::spec(b, &block).map(Library::Matmul),
            _ => None,
        })
        .collect();
    let mut skip = vec![Skip::Run; block.stmts.len()];
    for (k, info) in c.steps.iter().enumerate() {
        if let Some(&y) = info.writes.first() {
            if let Some(x) = views[y] {
                skip[k] = Skip::View(c.buffers[x].name.clone());
            }
        }
    }
    for k in 1..block.stmts.len() {
        let (Some(lib), StmtKind::Block(prev)) = (&library[k], &block.stmts[k - 1].kind) else {
            continue;
        };
        let (buffer, reached) = lib.output();
        let covers = reached == c.buffers[buffer].len as u64;
        if covers && prev.tags.contains("fill") && zero_fill_of(prev, &block, buffer) {
            skip[k - 1] = Skip::Fill;
        }
    }
    let param = c
        .buffers
        .iter()
        .map(|b| params.contains(&b.name.as_str()))
        .collect();
    let small = step_flops.iter().sum::<u64>() <= HERE_FLOPS
        && step_bytes.iter().sum::<u64>() <= HERE_BYTES;
    let placement = if small {
        Placement::Here
    } else {
        Placement::Pool
    };
    let partitions = block
        .stmts
        .iter()
        .map(|s| match &s.kind {
            StmtKind::Block(b) => partitions_per_thread(b, &options.kernel_options),
            _ => None,
        })
        .map(|p| p.unwrap_or(PARTITIONS_PER_THREAD))
        .collect();
    Ok(Executable {
        placement,
        library,
        partitions,
        skip,
        shapes,
        param,
        block,
        c,
        plan,
        kernel,
        step_flops,
        step_bytes,
        fresh,
    })
}

/// Lowers `def` and runs the pipeline on it, marking library matmuls and
/// the zero fills they make redundant on the way.
fn optimize(
    program: &Program,
    def: &str,
    sizes: &HashMap<String, i64>,
    options: &Options,
) -> Result<Block, BuildError> {
    optimize_recording(program, def, sizes, options).map(|(b, _, _)| b)
}

/// The kernel options the passes take when `build` compiles `def` with
/// `options` (its given ones where they apply, the cost models' choices
/// elsewhere), and the indices of the steps autotile saw: a tuner's
/// default record and space. Runs the pipeline; compiles nothing.
pub fn options_taken(
    program: &Program,
    def: &str,
    sizes: &HashMap<String, i64>,
    options: &Options,
) -> Result<(kernel::Options, kernel::StepIndices), BuildError> {
    optimize_recording(program, def, sizes, options).map(|(_, o, i)| (o, i))
}

fn optimize_recording(
    program: &Program,
    def: &str,
    sizes: &HashMap<String, i64>,
    options: &Options,
) -> Result<(Block, kernel::Options, kernel::StepIndices), BuildError> {
    let mut block = kernel::lower_def(program, def, sizes).map_err(BuildError::Lower)?;
    // The pipeline's leading `inline` passes run before the library matmuls
    // are marked, so that a matmul inside a called def (every node of an
    // imported ONNX model is a call of a prelude def) is a root step that
    // marking can see.
    let leading = options
        .passes
        .iter()
        .take_while(|p| p.as_str() == "inline")
        .count();
    let (first, rest) = options.passes.split_at(leading);
    // Verified after every pass when asked; in any case once at the end,
    // after the marking too, and not again by emission: verifying a large
    // kernel costs as much as emitting it.
    let verify = match options.verify {
        Verify::EachPass => Verify::EachPass,
        Verify::AtEnd | Verify::ByCaller => Verify::ByCaller,
    };
    let cx = kernel::PassCx::new(&options.target, &options.kernel_options);
    let run = |block: &mut Block, passes: &[String]| {
        kernel::run_pipeline_with(block, passes, &cx, verify, &mut |_, _| {})
            .map_err(BuildError::Internal)
    };
    run(&mut block, first)?;
    if options.library {
        matmul::mark(&mut block);
        band::mark(&mut block);
        mark_zero_fills(&mut block);
    }
    run(&mut block, rest)?;
    kernel::verify_block(&block).map_err(|errs| {
        BuildError::Internal(format!(
            "the pipeline `{}` produced a kernel that does not verify:\n  {}",
            options.passes.join(","),
            errs.join("\n  ")
        ))
    })?;
    let (mut taken, indices) = cx.into_parts();
    // The partitions are the runtime's choice: recorded where they matter,
    // for a step it splits into more than one part per thread.
    let threads = rayon::current_num_threads();
    for s in &block.stmts {
        let StmtKind::Block(b) = &s.kind else {
            continue;
        };
        let splits = if b.is_library() {
            !b.tags.contains("band")
                && matmul::spec(b, &block).is_some_and(|spec| spec.splits(threads))
        } else {
            b.idxs
                .iter()
                .any(|i| i.tags.contains("parallel") && i.range > threads as u64)
        };
        if let Some(n) = partitions_per_thread(b, &options.kernel_options).filter(|_| splits) {
            taken.record(&b.name, |o| o.partitions = Some(n));
        }
    }
    Ok((block, taken, indices))
}

/// The concrete shapes of `def`'s tensor parameters and results.
fn interface_shapes(
    program: &Program,
    def: &str,
    sizes: &HashMap<String, i64>,
) -> Result<HashMap<String, Vec<usize>>, BuildError> {
    let d = program
        .def(def)
        .ok_or_else(|| BuildError::Internal(format!("no def `{def}`")))?;
    let names = d
        .params
        .iter()
        .filter_map(|p| match p {
            ir::Param::Tensor(t) => Some(t),
            ir::Param::Scalar { .. } => None,
        })
        .chain(&d.outputs);
    let mut out = HashMap::new();
    for name in names {
        let decl = d
            .tensor(name)
            .ok_or_else(|| BuildError::Internal(format!("`{name}` is not declared")))?;
        let shape = decl
            .shape
            .iter()
            .map(|e| e.eval_map(sizes).ok().and_then(|v| usize::try_from(v).ok()))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| {
                BuildError::Internal(format!(
                    "the shape of `{name}` is not known for these sizes"
                ))
            })?;
        out.insert(name.clone(), shape);
    }
    Ok(out)
}

/// The partitions per thread of step `b` that the runtime splits: the
/// options' for a `#parallel` step or a library matmul, else the default;
/// `None` for a step it runs whole.
fn partitions_per_thread(b: &Block, options: &kernel::Options) -> Option<u64> {
    let default = if b.is_library() && !b.tags.contains("band") {
        matmul::CHUNKS_PER_THREAD as u64
    } else if b.tags.contains("parallel") {
        PARTITIONS_PER_THREAD
    } else {
        return None;
    };
    Some(options.step(&b.name).partitions.unwrap_or(default))
}

/// Partitions of a `#parallel` step per thread of the pool (when its range
/// has that many points): the threads take them as they come, so a thread
/// the shared machine slows for a while leaves its share to the others
/// instead of holding up the step.
const PARTITIONS_PER_THREAD: u64 = 4;

/// The memory of one run: a slot per [`Plan`] slot, each a buffer that a
/// caller's tensor may share (an input bound without a copy, a result
/// handed out).
#[derive(Clone, Debug)]
pub struct State {
    slots: Vec<Arc<Buffer>>,
}

/// One step's share of a profiled run.
#[derive(Clone, Debug)]
pub struct StepProfile {
    pub block: String,
    pub comment: String,
    pub time: Duration,
    pub flops: u64,
    pub bytes: u64,
}

impl Executable {
    /// Fresh, zeroed memory for a run. A tensor parameter's slot stays
    /// empty until [`Executable::bind`] gives it the caller's buffer (or
    /// [`Executable::set_values`] fills it): allocating it here would hold
    /// a model's weights twice at once. A step that reads an unbound
    /// parameter fails its size check, naming the buffer.
    pub fn state(&self) -> State {
        let mut bound_later = vec![false; self.plan.slot_bytes.len()];
        for (b, info) in self.c.buffers.iter().enumerate() {
            if self.param[b] && self.shapes.contains_key(&info.name) {
                bound_later[self.plan.map[b]] = true;
            }
        }
        State {
            slots: self
                .plan
                .slot_bytes
                .iter()
                .zip(bound_later)
                .map(|(&b, later)| Arc::new(Buffer::zeroed(if later { 0 } else { b })))
                .collect(),
        }
    }

    /// Buffer `name`'s position, type, elements and bytes.
    fn buffer(&self, name: &str) -> Result<(usize, DType, usize, usize), String> {
        self.c
            .buffers
            .iter()
            .enumerate()
            .find(|(_, b)| b.name == name)
            .map(|(k, b)| (k, b.dtype, b.len, b.bytes))
            .ok_or_else(|| format!("the kernel has no buffer `{name}`"))
    }

    /// Sets buffer `name` from values (converted to its type as a cast
    /// would): a scalar parameter from its one value, or any buffer from
    /// the VM's representation.
    pub fn set_values(
        &self,
        state: &mut State,
        name: &str,
        values: &[Value],
    ) -> Result<(), String> {
        let (k, dtype, len, bytes) = self.buffer(name)?;
        if values.len() != len {
            return Err(format!(
                "`{name}` has {len} elements, got {} values",
                values.len()
            ));
        }
        let t = Tensor::from_values(dtype, &[len], values);
        let s = self.plan.map[k];
        if state.slots[s].bytes() < bytes {
            state.slots[s] = Arc::new(Buffer::zeroed(self.plan.slot_bytes[s]));
        }
        let slot = Arc::make_mut(&mut state.slots[s]);
        slot.as_bytes_mut()[..bytes].copy_from_slice(&t.buffer().as_bytes()[..bytes]);
        Ok(())
    }

    /// Buffer `name` as values (the VM's representation).
    pub fn values(&self, state: &State, name: &str) -> Result<Vec<Value>, String> {
        let (k, dtype, len, _) = self.buffer(name)?;
        let slot = state.slots[self.plan.map[k]].clone();
        Ok(Tensor::from_buffer(dtype, &[len], slot)
            .map_err(|e| e.to_string())?
            .values())
    }

    /// Binds tensor parameter `name` to `t`, which must have its type and
    /// shape: a contiguous tensor's buffer becomes the parameter's slot
    /// without a copy (steps never write a parameter; one that would gets
    /// its own copy first), any other tensor is copied once.
    pub fn bind(&self, state: &mut State, name: &str, t: &Tensor) -> Result<(), String> {
        let (k, dtype, _, _) = self.buffer(name)?;
        let shape = self
            .shapes
            .get(name)
            .ok_or_else(|| format!("`{name}` is not a tensor parameter"))?;
        if t.dtype() != dtype || t.shape() != shape.as_slice() {
            return Err(format!(
                "`{name}` is {dtype}{}, got {}{}",
                tensor::show_tuple(shape),
                t.dtype(),
                tensor::show_tuple(t.shape())
            ));
        }
        state.slots[self.plan.map[k]] = t.contiguous().buffer().clone();
        Ok(())
    }

    /// Lets go of the buffer [`Executable::bind`] gave parameter `name`, so
    /// that a state kept for later runs does not keep the caller's tensor
    /// alive.
    pub fn unbind(&self, state: &mut State, name: &str) -> Result<(), String> {
        let (k, _, _, _) = self.buffer(name)?;
        state.slots[self.plan.map[k]] = Arc::new(Buffer::default());
        Ok(())
    }

    /// Result (or parameter) `name` after a run, as a tensor over its slot
    /// (no copy). The next run writes a fresh slot if the tensor is still
    /// held.
    pub fn output(&self, state: &State, name: &str) -> Result<Tensor, String> {
        let (k, dtype, _, _) = self.buffer(name)?;
        let shape = self
            .shapes
            .get(name)
            .ok_or_else(|| format!("`{name}` is not a tensor of the def's interface"))?;
        Tensor::from_buffer(dtype, shape, state.slots[self.plan.map[k]].clone())
            .map_err(|e| e.to_string())
    }

    /// Where [`Executable::run`] runs: [`Placement::Here`] for a run
    /// small enough that waking the pool would cost more than it saves.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// Runs every step, where [`Executable::placement`] says; with
    /// `profile`, records each step's time.
    pub fn run(
        &self,
        state: &mut State,
        profile: Option<&mut Vec<StepProfile>>,
    ) -> Result<(), String> {
        self.run_placed(state, profile, self.placement)
    }

    /// [`Executable::run`] at a given placement (both compute the same).
    ///
    /// In the pool, the steps run on a worker, not on the calling thread:
    /// work handed to the pool from outside it waits for a worker to wake
    /// and the caller to be woken back, tens of microseconds each time,
    /// which every parallel step and every split inside a library matmul
    /// would otherwise pay. From a worker, the other workers take their
    /// parts while still spinning for work.
    pub fn run_placed(
        &self,
        state: &mut State,
        profile: Option<&mut Vec<StepProfile>>,
        placement: Placement,
    ) -> Result<(), String> {
        match placement {
            Placement::Here => self.run_steps(state, profile, None),
            Placement::Pool => {
                rayon::scope(|_| self.run_steps(state, profile, Some(rayon::current_num_threads())))
            }
        }
    }

    /// The steps in order, parallel ones split for `threads` threads of
    /// the current pool, or whole on this thread without `threads`.
    fn run_steps(
        &self,
        state: &mut State,
        mut profile: Option<&mut Vec<StepProfile>>,
        threads: Option<usize>,
    ) -> Result<(), String> {
        for (b, info) in self.c.buffers.iter().enumerate() {
            let need = info.bytes;
            if self.param[b] && state.slots[self.plan.map[b]].bytes() < need {
                return Err(format!(
                    "input `{}` has no value: bind it before running",
                    info.name
                ));
            }
        }
        // A result slot a caller still holds (a tensor handed out by
        // `output` after an earlier run) is replaced by fresh zeros, which
        // is what the slot held before the first run, instead of being
        // copied and overwritten. Parameters keep their bound values (a
        // written one is copied by the step that writes it).
        for (b, info) in self.c.buffers.iter().enumerate() {
            let slot = &mut state.slots[self.plan.map[b]];
            if !info.temp && !self.param[b] && Arc::strong_count(slot) > 1 {
                *slot = Arc::new(Buffer::zeroed(slot.bytes()));
            }
        }
        for (k, info) in self.c.steps.iter().enumerate() {
            let why = match &self.skip[k] {
                Skip::Run => None,
                Skip::Fill => Some("the matmul overwrites it".to_string()),
                Skip::View(x) => Some(format!("a view of `{x}`")),
            };
            if let Some(why) = why {
                if let Some(p) = profile.as_deref_mut() {
                    p.push(StepProfile {
                        block: format!("{} (skipped: {why})", info.block),
                        comment: info.comment.clone(),
                        time: Duration::ZERO,
                        flops: 0,
                        bytes: 0,
                    });
                }
                continue;
            }
            for &b in &self.fresh[k] {
                let buf = &self.c.buffers[b];
                let bytes = buf.bytes;
                if let Some(v) =
                    Arc::make_mut(&mut state.slots[self.plan.map[b]]).view_mut::<u8>(bytes)
                {
                    v.fill(0);
                }
            }
            let parts: Vec<(i64, i64)> = match (info.parallel, threads) {
                (None, _) => vec![(0, 1)],
                (Some(range), None) => vec![(0, range as i64)],
                (Some(range), Some(threads)) => {
                    let n = (threads.max(1) as u64 * self.partitions[k])
                        .min(range)
                        .max(1);
                    (0..n)
                        .map(|p| {
                            let lo = range * p / n;
                            let hi = range * (p + 1) / n;
                            (lo as i64, hi as i64)
                        })
                        .collect()
                }
            };
            let start = Instant::now();
            match &self.library[k] {
                Some(lib) => {
                    let accumulate = k == 0 || self.skip[k - 1] != Skip::Fill;
                    self.run_library(
                        lib,
                        state,
                        accumulate,
                        threads.is_some(),
                        self.partitions[k],
                    )?;
                }
                None => self
                    .kernel
                    .run_partitions(k, &mut state.slots, &self.plan.map, &parts)?,
            }
            if let Some(p) = profile.as_deref_mut() {
                p.push(StepProfile {
                    block: info.block.clone(),
                    comment: info.comment.clone(),
                    time: start.elapsed(),
                    flops: self.step_flops[k],
                    bytes: self.step_bytes[k],
                });
            }
        }
        Ok(())
    }

    /// Runs a library product on the slots of its buffers. The matchers
    /// refuse a C that A or B reads, and the plan puts buffers one step
    /// touches in distinct slots, so C's slot can be borrowed apart.
    fn run_library(
        &self,
        lib: &Library,
        state: &mut State,
        accumulate: bool,
        parallel: bool,
        per_thread: u64,
    ) -> Result<(), String> {
        let buffers = lib.buffers();
        let lens = buffers.map(|b| self.c.buffers[b].len);
        let [sa, sb, sc] = buffers.map(|b| self.plan.map[b]);
        if sc == sa || sc == sb {
            return Err("a library product's output shares memory with an input".to_string());
        }
        let mut c_slot = std::mem::take(&mut state.slots[sc]);
        let (a, b) = (&*state.slots[sa], &*state.slots[sb]);
        let c = Arc::make_mut(&mut c_slot);
        let result = match lib {
            Library::Matmul(s) if s.dtype == DType::F32 => {
                matmul_on::<f32>(s, a, b, c, lens, accumulate, parallel.then_some(per_thread))
            }
            Library::Matmul(s) if s.dtype == DType::F64 => {
                matmul_on::<f64>(s, a, b, c, lens, accumulate, parallel.then_some(per_thread))
            }
            Library::Band(s) if s.dtype == DType::F32 => {
                band_on::<f32>(s, a, b, c, lens, accumulate, parallel)
            }
            Library::Band(s) if s.dtype == DType::F64 => {
                band_on::<f64>(s, a, b, c, lens, accumulate, parallel)
            }
            _ => Err("a library product of neither float32 nor float64".to_string()),
        };
        state.slots[sc] = c_slot;
        result
    }

    /// The number of zero fills skipped because a matmul overwrites them.
    pub fn skipped_steps(&self) -> usize {
        self.skip.iter().filter(|s| **s == Skip::Fill).count()
    }

    /// The number of steps skipped because their result is a view of
    /// their input.
    pub fn view_steps(&self) -> usize {
        self.skip
            .iter()
            .filter(|s| matches!(s, Skip::View(_)))
            .count()
    }

    /// The number of steps the matmul library runs.
    pub fn library_steps(&self) -> usize {
        self.library.iter().flatten().count()
    }

    /// The floating-point operations of one run.
    pub fn flops(&self) -> u64 {
        self.step_flops.iter().sum()
    }
}

/// [`matmul::run`] on slots holding buffers of `lens` elements; on the
/// pool, with `split` chunks per thread, or with `None` on this thread.
fn matmul_on<T: Element + matmul::Element>(
    spec: &MatmulSpec,
    a: &Buffer,
    b: &Buffer,
    c: &mut Buffer,
    lens: [usize; 3],
    accumulate: bool,
    split: Option<u64>,
) -> Result<(), String> {
    let missing = || "a library matmul's buffer does not fit its slot".to_string();
    let a = a.view::<T>(lens[0]).ok_or_else(missing)?;
    let b = b.view::<T>(lens[1]).ok_or_else(missing)?;
    let c = c.view_mut::<T>(lens[2]).ok_or_else(missing)?;
    let per_thread = split.map_or(1, |n| usize::try_from(n).unwrap_or(usize::MAX));
    matmul::run_with(spec, a, b, c, accumulate, split.is_some(), per_thread)
        .map_err(|e| e.to_string())
}

/// [`band::run`] on slots holding buffers of `lens` elements.
fn band_on<T: Element + matmul::Element + std::ops::AddAssign>(
    spec: &BandSpec,
    a: &Buffer,
    b: &Buffer,
    c: &mut Buffer,
    lens: [usize; 3],
    accumulate: bool,
    parallel: bool,
) -> Result<(), String> {
    let missing = || "a library band product's buffer does not fit its slot".to_string();
    let a = a.view::<T>(lens[0]).ok_or_else(missing)?;
    let b = b.view::<T>(lens[1]).ok_or_else(missing)?;
    let c = c.view_mut::<T>(lens[2]).ok_or_else(missing)?;
    band::run(spec, a, b, c, accumulate, parallel).map_err(|e| e.to_string())
}

/// For each root buffer, the buffer whose memory it shares: the result of
/// a step the `view` pass tagged, if that step reads one buffer and
/// writes only this temporary, no other step writes it, and no later step
/// writes the input. Chains of views share the first one's memory.
fn views(block: &Block, c: &CProgram) -> Vec<Option<usize>> {
    let mut views: Vec<Option<usize>> = vec![None; c.buffers.len()];
    for (k, (s, info)) in block.stmts.iter().zip(&c.steps).enumerate() {
        let StmtKind::Block(b) = &s.kind else {
            continue;
        };
        let ([x], [y]) = (info.reads.as_slice(), info.writes.as_slice()) else {
            continue;
        };
        let written_elsewhere = c
            .steps
            .iter()
            .enumerate()
            .any(|(j, o)| (j != k && o.writes.contains(y)) || (j > k && o.writes.contains(x)));
        if b.tags.contains(kernel::passes::view::TAG)
            && x != y
            && c.buffers[*y].temp
            && !written_elsewhere
        {
            views[*y] = Some(views[*x].unwrap_or(*x));
        }
    }
    views
}

/// Tags `library` and `fill` every zero fill of a library matmul's output
/// just before the matmul, so that the passes keep it as it is (one step
/// the runtime can skip) instead of vectorizing and splitting it.
fn mark_zero_fills(root: &mut Block) {
    let mut fills = Vec::new();
    for k in 1..root.stmts.len() {
        let (StmtKind::Block(prev), StmtKind::Block(next)) =
            (&root.stmts[k - 1].kind, &root.stmts[k].kind)
        else {
            continue;
        };
        let output = match next.is_library() {
            true if next.tags.contains("band") => band::spec(next, root).map(|s| s.c.buffer),
            true => matmul::spec(next, root).map(|s| s.c.buffer),
            false => None,
        };
        if output.is_some_and(|c| zero_fill_of(prev, root, c)) {
            fills.push(k - 1);
        }
    }
    for k in fills {
        if let StmtKind::Block(b) = &mut root.stmts[k].kind {
            b.tags.insert("library".to_string());
            b.tags.insert("fill".to_string());
        }
    }
}

/// Whether step block `b` stores zero into every element of root buffer
/// `buffer` and does nothing else: one single-element view per point, its
/// access the block's indices in order, their ranges the buffer's sizes.
fn zero_fill_of(b: &Block, root: &Block, buffer: usize) -> bool {
    let Some(target) = root.refs.get(buffer) else {
        return false;
    };
    let [s0, s1] = b.stmts.as_slice() else {
        return false;
    };
    let (StmtKind::Constant { into: x, value, .. }, StmtKind::Store { from, into: view }) =
        (&s0.kind, &s1.kind)
    else {
        return false;
    };
    let zero = matches!(value, Value::Float(v) if *v == 0.0 && v.is_sign_positive())
        || matches!(value, Value::Int(0));
    let Some(r) = b.refinement(view) else {
        return false;
    };
    zero && from == x
        && r.from.as_deref() == Some(target.into.as_str())
        && r.agg == kernel::Agg::Assign
        && b.visits_each_element(r, target)
}
