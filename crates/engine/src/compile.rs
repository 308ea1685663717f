//! Compiling a def for bound sizes: lowering, the pass pipeline, C, the
//! kernel cache and loading (all in `runtime::build`), into a [`Compiled`]
//! that runs many times on new arguments without compiling again.
//!
//! Requires: sizes binding every size symbol and integer scalar of the
//! def. Guarantees: a form lowering does not handle yet is
//! [`Error::NotLowered`] (decided on `kernel::LowerErrorKind`, never on a
//! message), every other build failure is [`Error::Build`] or a problem
//! with the options ([`Error::Usage`], [`Error::Read`],
//! [`Error::Environment`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use interp::{Arg, Tensor};
use ir::{Def, Program};
use runtime::{BuildError, Executable, State, StepProfile};

use crate::bind::Sizes;
use crate::{transfer, Error};

/// How to compile: the choices of every command that compiles.
#[derive(Clone, Debug)]
pub struct Options {
    /// A shipped pipeline by name (`cpu`, `cpu-serial`) or a file of pass
    /// names.
    pub pipeline: String,
    /// A target file; `None` for this machine, probed once and cached.
    pub target: Option<PathBuf>,
    /// Run the kernel verifier after every pass, not only after the last.
    pub verify_passes: bool,
    /// Run matmuls with the matmul library instead of generated code.
    pub library: bool,
    /// Rewrite convolutions and the chains reading them into
    /// channel-blocked layouts first (`opt::layout`).
    pub layout: bool,
    /// Store an output that one elementwise statement computes from a
    /// transposed read in that read's order and hand it out as a strided
    /// view (`ssa::layout`). Off where outputs are arguments of further
    /// compiled code (loop stages, packed weights), which would copy them
    /// back into order on every run.
    pub output_layouts: bool,
    /// Compile with the kernel options `tessera tune` kept for a kernel
    /// when the tuning cache holds them (off: the cost models' choices).
    pub tuned: bool,
    /// The kernel passes' choices (`kernel::Options`); empty leaves them
    /// to the cost models, or to the tuning cache with `tuned`.
    pub kernel_options: kernel::Options,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            pipeline: "cpu".to_string(),
            target: None,
            verify_passes: false,
            library: true,
            layout: true,
            output_layouts: true,
            tuned: true,
            kernel_options: kernel::Options::default(),
        }
    }
}

impl Options {
    /// The runtime's options: the pipeline's passes and the target read.
    pub fn resolve(&self) -> Result<runtime::Options, Error> {
        Ok(runtime::Options {
            passes: pipeline_passes(&self.pipeline)?,
            target: crate::target::load(self.target.as_deref())?,
            verify: if self.verify_passes {
                kernel::Verify::EachPass
            } else {
                kernel::Verify::AtEnd
            },
            library: self.library,
            kernel_options: self.kernel_options.clone(),
        })
    }
}

/// The passes of pipeline `p`: a shipped one by name, or a file.
pub fn pipeline_passes(p: &str) -> Result<Vec<String>, Error> {
    let (source, text) = match kernel::builtin_pipeline(p) {
        Some(t) => (format!("pipeline `{p}`"), t.to_string()),
        None => {
            let unreadable = |e: &dyn std::fmt::Display| {
                Error::Usage(format!(
                    "`{p}` is neither a shipped pipeline ({}) nor a readable file: {e}",
                    kernel::BUILTIN_PIPELINES.join(", ")
                ))
            };
            let bytes = tensor::file::read_limited(Path::new(p), tensor::file::TEXT_LIMIT)
                .map_err(|e| unreadable(&e))?;
            let text = String::from_utf8(bytes).map_err(|e| unreadable(&e))?;
            (format!("`{p}`"), text)
        }
    };
    kernel::parse_pipeline(&text).map_err(|e| Error::Usage(format!("{source}: {e}")))
}

/// A def compiled for concrete sizes and loaded, with its outputs.
/// and shapes.
#[derive(Debug)]
pub struct Compiled {
    pub(crate) exe: Executable,
    /// The def's outputs, in order.
    pub(crate) outputs: Vec<String>,
    /// The outputs stored in another order of their dimensions
    /// (`ssa::layout`), handed out as strided views in the declared order.
    pub(crate) permuted: Vec<ssa::layout::Permuted>,
    /// The time `tessera tune` measured for the tuned options this was
    /// compiled with (from the tuning cache), if it was.
    pub(crate) tuned_ns: Option<u64>,
}

/// Compiles `def` of `program` for `sizes` with the per-user kernel cache
/// (in channel-blocked layouts first, with [`Options::layout`]).
pub fn compile(
    program: &Program,
    def: &Def,
    sizes: &Sizes,
    options: &Options,
) -> Result<Compiled, Error> {
    crate::constants::compile_constants(program, def, sizes, options, HashMap::new())
        .map(|built| built.compiled)
}

/// `program` with `def` rewritten into channel-blocked layouts of the
/// target's float32 vector width, for `sizes` (`opt::layout`); `None` when
/// nothing is rewritten.
pub fn layout(
    program: &Program,
    def: &Def,
    sizes: &Sizes,
    target: &kernel::Target,
) -> Option<Program> {
    let lanes = i64::from(target.vector_bits / 32);
    let blocked = opt::layout::block_channels(def, lanes, sizes)?;
    let mut out = program.clone();
    let slot = out.defs.iter_mut().find(|d| d.name == def.name)?;
    *slot = blocked;
    Some(out)
}

/// [`compile`] with resolved options and a given kernel cache.
pub fn compile_with(
    program: &Program,
    def: &Def,
    sizes: &Sizes,
    options: &runtime::Options,
    cache: &codegen::cache::KernelCache,
    output_layouts: bool,
) -> Result<Compiled, Error> {
    // Only what is compiled has its selects split (`ssa::split`: each
    // point then computes one branch, through affine reads) and its
    // outputs reordered (`ssa::layout`).
    let mut program = program.clone();
    let mut permuted = Vec::new();
    if let Some(d) = program.defs.iter_mut().find(|d| d.name == def.name) {
        ssa::split::split_selects(&mut d.stmts);
        if output_layouts {
            permuted = ssa::layout::permute_outputs(d, sizes);
        }
    }
    let program = &program;
    let exe = runtime::build(program, &def.name, sizes, options, cache).map_err(|e| match e {
        BuildError::Lower(l) if l.kind == kernel::LowerErrorKind::NotLoweredYet => {
            Error::NotLowered {
                def: def.name.clone(),
                reason: l.message,
            }
        }
        BuildError::Environment(m) => Error::cache(m),
        e => Error::Build(e),
    })?;
    Ok(Compiled {
        exe,
        outputs: def.outputs.clone(),
        permuted,
        tuned_ns: None,
    })
}

impl Compiled {
    /// The generated C.
    pub fn c_source(&self) -> &str {
        &self.exe.c.source
    }

    /// The kernel after the pipeline, as text.
    pub fn kernel_text(&self) -> String {
        kernel::print_block(&self.exe.block)
    }

    /// The time `tessera tune` measured for the tuned kernel options this
    /// was compiled with, when the tuning cache supplied them.
    pub fn tuned_ns(&self) -> Option<u64> {
        self.tuned_ns
    }

    /// The steps (kernels and library calls) one run executes.
    pub fn steps(&self) -> usize {
        self.exe.step_flops.len()
    }

    /// The floating-point operations of one run.
    pub fn flops(&self) -> u64 {
        self.exe.flops()
    }

    /// The bytes of the memory plan's slots (inputs, weights, outputs and
    /// temporaries sharing slots by liveness).
    pub fn slot_bytes(&self) -> usize {
        self.exe.plan.total_bytes()
    }

    /// Fresh memory holding `args`, ready for [`Compiled::run_state`].
    pub fn prepare(&self, args: &HashMap<String, Arg>) -> Result<State, Error> {
        let mut state = self.exe.state();
        transfer::set_args(&self.exe, &mut state, args)?;
        Ok(state)
    }

    /// Binds `args` in `state` (kept from an earlier run).
    pub fn bind(&self, state: &mut State, args: &HashMap<String, Arg>) -> Result<(), Error> {
        transfer::set_args(&self.exe, state, args)
    }

    /// Lets go of the tensor arguments `state` holds, so a state kept for
    /// later runs does not keep them alive.
    pub fn unbind(&self, state: &mut State, args: &HashMap<String, Arg>) -> Result<(), Error> {
        for (name, a) in args {
            if let Arg::Tensor(_) = a {
                self.exe.unbind(state, name).map_err(Error::Internal)?;
            }
        }
        Ok(())
    }

    /// Runs every step on `state`; with `profile`, records each step's
    /// time. The error is the failing step's message.
    pub fn run_state(
        &self,
        state: &mut State,
        profile: Option<&mut Vec<StepProfile>>,
    ) -> Result<(), String> {
        self.exe.run(state, profile)
    }

    /// The outputs `state` holds, as tensors.
    pub fn outputs(&self, state: &State) -> Result<Vec<(String, Tensor)>, Error> {
        let mut outputs = transfer::outputs(&self.exe, state, &self.outputs)?;
        for p in &self.permuted {
            // Declared dimension `p.perm[k]` is stored as dimension `k`.
            let mut declared = vec![0; p.perm.len()];
            for (k, &d) in p.perm.iter().enumerate() {
                declared[d] = k;
            }
            for (name, t) in &mut outputs {
                if *name == p.tensor {
                    *t = t
                        .permute(&declared)
                        .map_err(|e| Error::Internal(e.to_string()))?;
                }
            }
        }
        Ok(outputs)
    }
}
