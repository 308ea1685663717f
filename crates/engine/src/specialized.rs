//! A def compiled once for one set of sizes and run many times, from any
//! number of threads at once: what a [`crate::Model`] or a
//! [`crate::Function`] keeps per set of input shapes, and the cache of
//! them ([`Specializations`]).
//!
//! Each run takes a state (the memory of one run) from a pool, binds the
//! arguments that are the same on every run (a model's weights) once per
//! state and the caller's tensors on every run (in place when contiguous),
//! runs on the chosen thread pool, hands the outputs out over their slots,
//! and lets go of the caller's tensors before putting the state back. A
//! def lowering does not handle yet runs on the interpreter (noted once,
//! when built). When compiling or a compiled step fails otherwise, the
//! interpreter runs the def to locate the program's error, as
//! `session::run` does.
//!
//! Guarantees: outputs are the def's, in its order, each a tensor no later
//! run writes; a state in the pool holds none of a caller's tensors.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

use interp::{Arg, Tensor};
use ir::Def;
use runtime::State;

use crate::bind::{Bound, Sizes};
use crate::{compile, constants, session, transfer, Error, Note, Source};

/// A def ready to run for one set of sizes.
#[derive(Debug)]
pub struct Specialized {
    exec: Exec,
    /// Arguments bound on every run (a model's weights).
    fixed: HashMap<String, Arg>,
    pool: Option<Arc<rayon::ThreadPool>>,
}

#[derive(Debug)]
enum Exec {
    Compiled {
        compiled: Box<compile::Compiled>,
        /// States of finished runs, for the next ones.
        states: Mutex<Vec<State>>,
    },
    /// A def with loop or branch regions: its straight-line stages
    /// compiled, the regions run around them (`regions`).
    Staged(Box<crate::regions::Staged>),
    /// Lowering does not handle the def yet.
    Interpreted,
}

/// Where and how a specialization runs.
#[derive(Clone, Debug, Default)]
pub struct Setup {
    /// `None` for the interpreter, else compiled with these options.
    pub compiled: Option<compile::Options>,
    /// The thread pool to run on; `None` for rayon's global pool.
    pub pool: Option<Arc<rayon::ThreadPool>>,
}

impl Specialized {
    /// Compiles `def` of `source` for `sizes`, with `fixed` bound on every
    /// run. `first` are the arguments and given sizes of the run that
    /// asks, if one does, with which the interpreter locates a program
    /// error that compiling finds.
    pub fn build(
        source: &Source,
        def: &Def,
        sizes: &Sizes,
        fixed: HashMap<String, Arg>,
        setup: &Setup,
        first: Option<(&HashMap<String, Arg>, &Sizes)>,
        notes: &mut Vec<Note>,
    ) -> Result<Specialized, Error> {
        let Some(options) = &setup.compiled else {
            return Ok(Specialized {
                exec: Exec::Interpreted,
                fixed,
                pool: setup.pool.clone(),
            });
        };
        let mut fixed = fixed;
        let built = if def.has_regions() {
            crate::regions::compile(source.program(), def, sizes, options)
                .map(|staged| Exec::Staged(Box::new(staged)))
        } else {
            constants::compile_constants(source.program(), def, sizes, options, fixed.clone()).map(
                |built| {
                    fixed = built.fixed;
                    Exec::Compiled {
                        compiled: Box::new(built.compiled),
                        states: Mutex::new(Vec::new()),
                    }
                },
            )
        };
        let exec = match built {
            Ok(exec) => exec,
            Err(Error::NotLowered { def, reason }) => {
                notes.push(Note::NotCompiled { def, reason });
                Exec::Interpreted
            }
            Err(Error::Build(
                b @ (runtime::BuildError::Lower(_) | runtime::BuildError::Internal(_)),
            )) => {
                let Some((args, given)) = first else {
                    return Err(Error::Build(b));
                };
                let bound = merged(def, &fixed, args, given);
                return Err(session::rerun(
                    source,
                    def,
                    &bound,
                    &interp::Reporter::default(),
                    &b.to_string(),
                ));
            }
            Err(e) => return Err(e),
        };
        Ok(Specialized {
            exec,
            fixed,
            pool: setup.pool.clone(),
        })
    }

    /// Whether the def runs compiled (else on the interpreter).
    pub fn is_compiled(&self) -> bool {
        matches!(self.exec, Exec::Compiled { .. } | Exec::Staged(_))
    }

    /// Runs on `args` (the arguments besides the fixed ones), with the
    /// caller's sizes `given`: the def's outputs, in its order.
    pub fn run(
        &self,
        source: &Source,
        def: &Def,
        args: &HashMap<String, Arg>,
        given: &Sizes,
    ) -> Result<Vec<(String, Tensor)>, Error> {
        let (compiled, states) = match &self.exec {
            Exec::Compiled { compiled, states } => (compiled, states),
            Exec::Staged(staged) => {
                let bound = merged(def, &self.fixed, args, given);
                let outputs = self.on_pool(|| staged.run(&bound.args));
                return located(outputs, source, def, || bound);
            }
            Exec::Interpreted => {
                let bound = merged(def, &self.fixed, args, given);
                return self.on_pool(|| {
                    session::interpret(source, def, &bound, &interp::Reporter::default())
                });
            }
        };
        let reuse = states.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let mut state = match reuse {
            Some(s) => s,
            None => compiled.prepare(&self.fixed)?,
        };
        transfer::set_args(&compiled.exe, &mut state, args)?;
        // A run the executable keeps on the calling thread skips the pool
        // too: entering it costs what the placement saves.
        let ran = match compiled.exe.placement() {
            runtime::Placement::Here => compiled.run_state(&mut state, None),
            runtime::Placement::Pool => self.on_pool(|| compiled.run_state(&mut state, None)),
        };
        let outputs = ran
            .map_err(Error::Compiled)
            .and_then(|()| compiled.outputs(&state));
        // The caller's tensors are let go of before the state waits for
        // the next run; an unbound slot is bound again by that run.
        if compiled.unbind(&mut state, args).is_ok() {
            states
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(state);
        }
        located(outputs, source, def, || {
            merged(def, &self.fixed, args, given)
        })
    }

    fn on_pool<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        match &self.pool {
            Some(pool) => pool.install(f),
            None => f(),
        }
    }
}

/// A compiled run's `outputs`, a failure of the compiled code located by
/// running the interpreter on the arguments `bound` gives.
fn located(
    outputs: Result<Vec<(String, Tensor)>, Error>,
    source: &Source,
    def: &Def,
    bound: impl FnOnce() -> Bound,
) -> Result<Vec<(String, Tensor)>, Error> {
    match outputs {
        Err(Error::Compiled(why)) => Err(session::rerun(
            source,
            def,
            &bound(),
            &interp::Reporter::default(),
            &why,
        )),
        other => other,
    }
}

/// The def's arguments, as one binding for the interpreter: those of
/// `fixed` that are its parameters (the load step's results are not), and
/// `args`.
fn merged(
    def: &Def,
    fixed: &HashMap<String, Arg>,
    args: &HashMap<String, Arg>,
    given: &Sizes,
) -> Bound {
    let mut all: HashMap<String, Arg> = fixed
        .iter()
        .filter(|(n, _)| def.params.iter().any(|p| p.name() == n.as_str()))
        .map(|(n, a)| (n.clone(), a.clone()))
        .collect();
    all.extend(args.iter().map(|(k, v)| (k.clone(), v.clone())));
    Bound {
        args: all,
        given: given.clone(),
        sizes: given.clone(),
        notes: Vec::new(),
    }
}

/// Specializations by key (the input shapes, or the bound sizes), each
/// built once: concurrent first runs of one key wait for one build, and
/// runs of other keys do not wait for it.
#[derive(Debug)]
pub struct Specializations<K, V> {
    map: Mutex<HashMap<K, Cell<V>>>,
}

/// One key's specialization: empty until built, locked while building.
type Cell<V> = Arc<Mutex<Option<Arc<V>>>>;

impl<K, V> Default for Specializations<K, V> {
    fn default() -> Self {
        Specializations {
            map: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash, V> Specializations<K, V> {
    /// The specialization of `key`, built by `build` if there is none yet
    /// (a failed build is not kept: the next run tries again).
    pub fn get_or_build(
        &self,
        key: K,
        build: impl FnOnce() -> Result<V, Error>,
    ) -> Result<Arc<V>, Error> {
        let cell = self
            .map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_default()
            .clone();
        let mut slot = cell.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(v) = slot.as_ref() {
            return Ok(v.clone());
        }
        let v = Arc::new(build()?);
        *slot = Some(v.clone());
        Ok(v)
    }

    /// How many specializations are built.
    pub fn len(&self) -> usize {
        let map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        map.values()
            .filter(|c| c.lock().unwrap_or_else(PoisonError::into_inner).is_some())
            .count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A thread pool of `threads` threads, one per count for the whole
/// process, so that sessions asking for the same count share it.
pub fn thread_pool(threads: usize) -> Result<Arc<rayon::ThreadPool>, Error> {
    static POOLS: Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>> = Mutex::new(Vec::new());
    if threads == 0 {
        return Err(Error::Usage(
            "`threads` must be at least 1 (or left out for all cores)".to_string(),
        ));
    }
    let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, p)) = pools.iter().find(|(n, _)| *n == threads) {
        return Ok(p.clone());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |k| format!("tessera-{threads}-{k}"))
        .build()
        .map(Arc::new)
        .map_err(|e| Error::Environment(format!("cannot start {threads} threads: {e}")))?;
    pools.push((threads, pool.clone()));
    Ok(pool)
}
