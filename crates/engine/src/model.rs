//! An ONNX model loaded once and run many times, as ONNX Runtime's
//! `InferenceSession` is: its declared inputs and outputs, and a run that
//! takes tensors by input name and gives the outputs asked for. The model
//! is imported and compiled once per set of input shapes
//! ([`Specializations`]); with every input dimension fixed (or bound by
//! the given sizes) that happens when the model is opened, so that a model
//! tessera cannot run is refused there; a model with symbolic inputs is
//! checked there for operators tessera does not support.
//!
//! A model whose shapes depend on values it computes (`NonZero` of a
//! comparison, a `Range` up to a computed bound) runs the part of it that
//! computes them first, each run ([`Model::open_part`], itself a model);
//! the program of the rest is kept by those values, or for a runtime step
//! (`onnx::Step`) by its outputs' shapes, which the run passes it.
//!
//! Opened with optimizer options, each instance runs the optimizer's
//! result for its input shapes (`optimize::optimize_cached`: searched
//! once, then read from the cache) instead of the imported def; the
//! result has the def's signature, so the weights bind as before.
//!
//! Guarantees: every problem with the tensors given is an [`Error`] naming
//! the input or output: an unknown or missing name or a wrong element type
//! is [`Error::Input`], a wrong rank or dimension [`Error::Shape`], a
//! symbolic dimension given two values [`Error::Sizes`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use interp::{Arg, Tensor};

use crate::bind::Sizes;
use crate::specialized::{Setup, Specializations, Specialized};
use crate::{Error, Note, Source};

/// A model ready to run.
#[derive(Debug)]
pub struct Model {
    path: PathBuf,
    sizes: Sizes,
    setup: Setup,
    /// Optimize each instance's def first, with these options.
    optimize: Option<crate::optimize::Options>,
    /// The inputs and outputs the model declares.
    pub signature: onnx::Signature,
    instances: Specializations<InstanceKey, Instance>,
    /// For each set of input shapes imported, what the import reads
    /// besides the shapes.
    reads: std::sync::Mutex<HashMap<Vec<Vec<usize>>, Reads>>,
    /// The tensors (by ONNX name) this model is the part of its file that
    /// computes them ([`onnx::cut`]); empty for the whole model.
    part: Vec<String>,
    /// For each set of input shapes whose import needs values the model
    /// computes (`NonZero`'s data, a `Range` bound computed from an
    /// input), the part of the model that computes them: it runs first,
    /// and the instance is specialized on its results, which fix the
    /// shapes of the rest. A part is a model too, with parts of its own
    /// when what it computes needs such values.
    stages: std::sync::Mutex<HashMap<Vec<Vec<usize>>, std::sync::Arc<Model>>>,
}

/// What an instance is built for: the input shapes (in declared order),
/// the values of the inputs its import was specialized on (by position),
/// the values of the tensors the model computes that its import read (by
/// ONNX name, in order), and the shapes of its runtime steps' outputs.
type InstanceKey = (
    Vec<Vec<usize>>,
    Vec<(usize, Vec<i64>)>,
    Vec<(String, Vec<i64>)>,
    Vec<Vec<usize>>,
);

/// What the import of a set of input shapes reads besides the shapes,
/// which the instances of those shapes are kept by.
#[derive(Clone, Debug)]
struct Reads {
    /// The positions of the inputs whose values it reads.
    inputs: Vec<usize>,
    /// The tensors the model computes whose values it reads, by ONNX name.
    computed: Vec<String>,
    /// Its runtime steps, whose outputs' shapes are in the key.
    steps: Vec<onnx::Step>,
}

impl Reads {
    /// Whether `instance` reads the same as these (its steps by their
    /// inputs and weights).
    fn fits(&self, instance: &Instance) -> bool {
        let other = &instance.reads;
        let steps = |r: &Reads| -> Vec<(String, Vec<String>)> {
            r.steps
                .iter()
                .map(|s| (s.input.clone(), s.weights.clone()))
                .collect()
        };
        self.inputs == other.inputs
            && self.computed == other.computed
            && steps(self) == steps(other)
    }
}

/// The model imported and compiled for one set of input shapes.
#[derive(Debug)]
struct Instance {
    source: Source,
    spec: Specialized,
    /// The model def's parameter for each declared input (`None` for one
    /// with an empty dimension, which the def does not take).
    params: Vec<Option<String>>,
    /// What the import read besides the shapes: the inputs
    /// (`onnx::Model::specialized`), the tensors the model computes
    /// (`onnx::Model::computed_read`) and the runtime steps
    /// (`onnx::Model::steps`), whose outputs each run passes for the
    /// weights that hold them.
    reads: Reads,
    /// The steps' weights that are parameters of the def.
    step_params: std::collections::HashSet<String>,
}

impl Model {
    /// Opens the model at `path`; `sizes` binds symbolic input dimensions
    /// by name; with `optimize`, each set of input shapes runs the
    /// optimizer's result. Notes (a model compiled only in part) go to
    /// `notes`.
    pub fn open(
        path: &Path,
        sizes: Sizes,
        setup: Setup,
        optimize: Option<crate::optimize::Options>,
        notes: &mut Vec<Note>,
    ) -> Result<Model, Error> {
        Model::open_part(path, Vec::new(), sizes, setup, optimize, notes)
    }

    /// [`Model::open`] of the part of the model that computes the tensors
    /// `part` (by ONNX name), which are its outputs; the whole model when
    /// `part` is empty.
    pub fn open_part(
        path: &Path,
        part: Vec<String>,
        sizes: Sizes,
        setup: Setup,
        optimize: Option<crate::optimize::Options>,
        notes: &mut Vec<Note>,
    ) -> Result<Model, Error> {
        crate::bind::check_positive(&sizes)?;
        if let Some(o) = &optimize {
            o.search.check().map_err(Error::Usage)?;
        }
        let mut loaded = onnx::load(path)?;
        if !part.is_empty() {
            onnx::cut(&mut loaded, &part)?;
        }
        // Checked here, not at the first run, for a model whose input
        // shapes wait for that run.
        onnx::check_operators(&loaded)?;
        let signature = onnx::signature(&loaded);
        let symbols: Vec<&str> = signature
            .inputs
            .iter()
            .flat_map(|i| i.dims.iter().flatten())
            .filter_map(|d| match d {
                onnx::Dim::Symbol(s) => Some(s.as_str()),
                _ => None,
            })
            .collect();
        let mut given: Vec<&String> = sizes.keys().collect();
        given.sort();
        if let Some(unknown) = given.iter().find(|s| !symbols.contains(&s.as_str())) {
            let known = if symbols.is_empty() {
                "it has none".to_string()
            } else {
                let mut names: Vec<String> = symbols.iter().map(|s| format!("`{s}`")).collect();
                names.dedup();
                format!("its symbolic dimensions are {}", names.join(", "))
            };
            return Err(Error::Sizes(format!(
                "size `{unknown}`: the model has no symbolic input dimension `{unknown}` ({known})"
            )));
        }
        let model = Model {
            path: path.to_path_buf(),
            sizes,
            setup,
            optimize,
            signature,
            instances: Specializations::default(),
            reads: Default::default(),
            part,
            stages: Default::default(),
        };
        if let Some(shapes) = model.static_shapes() {
            // A model whose import needs an input's value is compiled at
            // its first run, when the value is known.
            match model.instance(shapes, &[], notes) {
                Ok(_) | Err(Error::NeedsValue(_) | Error::NeedsComputed { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(model)
    }

    /// The input shapes, when the declared dimensions and the given sizes
    /// fix them all.
    fn static_shapes(&self) -> Option<Vec<Vec<usize>>> {
        self.signature
            .inputs
            .iter()
            .map(|i| {
                i.dims
                    .as_ref()?
                    .iter()
                    .map(|d| match d {
                        onnx::Dim::Fixed(v) => usize::try_from(*v).ok(),
                        onnx::Dim::Symbol(s) => {
                            self.sizes.get(s).and_then(|&v| usize::try_from(v).ok())
                        }
                        onnx::Dim::Unknown => None,
                    })
                    .collect()
            })
            .collect()
    }

    /// How many programs the model is compiled into: one per set of input
    /// shapes, values of the inputs the import takes as constants, values
    /// of the tensors it computes that the import reads and shapes of its
    /// runtime steps' outputs (the parts run first are not counted).
    pub fn specializations(&self) -> usize {
        self.instances.len()
    }

    /// Runs the model on `feed` (tensors by input name) and returns the
    /// outputs named by `want` in its order, or all of them in the model's
    /// order. Notes (a fallback to the interpreter) go to `notes`.
    pub fn run(
        &self,
        feed: Vec<(String, Tensor)>,
        want: Option<&[String]>,
        notes: &mut Vec<Note>,
    ) -> Result<Vec<(String, Tensor)>, Error> {
        let declared = |name: &str| self.signature.outputs.iter().any(|o| o.name == name);
        if let Some(unknown) = want.into_iter().flatten().find(|n| !declared(n)) {
            return Err(Error::Input {
                name: unknown.clone(),
                message: format!(
                    "the model has no output `{unknown}`\n  = help: its outputs are {}",
                    listed(self.signature.outputs.iter().map(|o| &o.name))
                ),
            });
        }
        let mut given: Vec<Option<Tensor>> = vec![None; self.signature.inputs.len()];
        for (name, t) in feed {
            let Some(k) = self.signature.inputs.iter().position(|i| i.name == name) else {
                return Err(Error::Input {
                    message: format!(
                        "the model has no input `{name}`\n  = help: its inputs are {}",
                        listed(self.signature.inputs.iter().map(|i| &i.name))
                    ),
                    name,
                });
            };
            self.check_input(k, &t)?;
            given[k] = Some(t);
        }
        let missing: Vec<&String> = self
            .signature
            .inputs
            .iter()
            .zip(&given)
            .filter(|(_, t)| t.is_none())
            .map(|(i, _)| &i.name)
            .collect();
        if let Some(first) = missing.first() {
            return Err(Error::Input {
                name: first.to_string(),
                message: format!("the model's input {} is not given", listed(missing)),
            });
        }
        let tensors: Vec<Tensor> = given.into_iter().flatten().collect();
        let shapes: Vec<Vec<usize>> = tensors.iter().map(|t| t.shape().to_vec()).collect();
        let (instance, steps) = self.instance(shapes, &tensors, notes)?;
        let mut args = instance.args(tensors);
        args.extend(steps);
        let def = instance.source.pick_def(None)?;
        let outputs = instance
            .spec
            .run(&instance.source, def, &args, &HashMap::new())?;
        let named: Vec<(String, Tensor)> = outputs
            .into_iter()
            .map(|(n, t)| (instance.source.output_name(&n), t))
            .collect();
        let Some(want) = want else {
            return Ok(named);
        };
        // A name asked for twice is given twice (the same tensor).
        want.iter()
            .map(|w| {
                named
                    .iter()
                    .find(|(n, _)| n == w)
                    .cloned()
                    .ok_or_else(|| Error::Internal(format!("output `{w}` was not computed")))
            })
            .collect()
    }

    /// Whether tensor `t` fits declared input `k`: its element type, rank
    /// and fixed dimensions, and the sizes given for its symbolic ones.
    fn check_input(&self, k: usize, t: &Tensor) -> Result<(), Error> {
        let decl = &self.signature.inputs[k];
        let name = &decl.name;
        if let Some(d) = decl.dtype {
            if t.dtype() != d {
                return Err(Error::Input {
                    name: name.clone(),
                    message: format!(
                        "input `{name}` is {} ({}), but the model declares tensor({})",
                        t.dtype(),
                        tensor::show_tuple(t.shape()),
                        decl.type_name
                    ),
                });
            }
        }
        let Some(dims) = &decl.dims else {
            return Ok(());
        };
        let shape_error = |why: String| Error::Shape {
            name: name.clone(),
            message: format!(
                "input `{name}` has shape {}, but the model declares [{}]: {why}",
                tensor::show_tuple(t.shape()),
                dims.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        if t.rank() != dims.len() {
            return Err(shape_error(format!(
                "rank {} where the model has rank {}",
                t.rank(),
                dims.len()
            )));
        }
        for (axis, (d, &n)) in dims.iter().zip(t.shape()).enumerate() {
            let expect = match d {
                onnx::Dim::Fixed(v) => Some(*v),
                onnx::Dim::Symbol(s) => self.sizes.get(s).copied(),
                onnx::Dim::Unknown => None,
            };
            if let Some(v) = expect.filter(|&v| i64::try_from(n).ok() != Some(v)) {
                return Err(shape_error(format!("dimension {axis} must be {v}")));
            }
        }
        Ok(())
    }

    /// The model imported and compiled for input `shapes` (in declared
    /// order) and the values of `tensors` its import reads as constants,
    /// from the cache or now; with the values of the tensors the model
    /// computes that the import reads, by ONNX name, which the model's
    /// stage for these shapes computed from `tensors` (none without one).
    /// An import that needs such values and has none makes the stage that
    /// computes them (or a larger one), and the import is tried again.
    /// Also gives the arguments of the instance's runtime steps for this
    /// run.
    fn instance(
        &self,
        shapes: Vec<Vec<usize>>,
        tensors: &[Tensor],
        notes: &mut Vec<Note>,
    ) -> Result<(std::sync::Arc<Instance>, HashMap<String, Arg>), Error> {
        let stage = self
            .stages
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&shapes)
            .cloned();
        let mut computed = match stage {
            Some(stage) => self.run_stage(&stage, tensors, notes)?,
            None => HashMap::new(),
        };
        loop {
            match self.instance_with(shapes.clone(), tensors, &computed, notes) {
                Err(Error::NeedsComputed { names, message }) if !tensors.is_empty() => {
                    let part =
                        crate::stages::grown(computed.into_keys().collect(), names, &message)?;
                    let stage = std::sync::Arc::new(Model::open_part(
                        &self.path,
                        part,
                        self.sizes.clone(),
                        self.setup.clone(),
                        None,
                        notes,
                    )?);
                    computed = self.run_stage(&stage, tensors, notes)?;
                    self.stages
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .insert(shapes.clone(), stage);
                }
                result => return result,
            }
        }
    }

    /// The tensors `stage` computes from the run's inputs `tensors`, by
    /// ONNX name.
    fn run_stage(
        &self,
        stage: &Model,
        tensors: &[Tensor],
        notes: &mut Vec<Note>,
    ) -> Result<HashMap<String, Tensor>, Error> {
        let feed = self
            .signature
            .inputs
            .iter()
            .map(|i| i.name.clone())
            .zip(tensors.iter().cloned())
            .collect();
        Ok(stage.run(feed, None, notes)?.into_iter().collect())
    }

    /// [`Model::instance`] with the values `computed` of tensors the
    /// model computes.
    fn instance_with(
        &self,
        shapes: Vec<Vec<usize>>,
        tensors: &[Tensor],
        computed: &HashMap<String, Tensor>,
        notes: &mut Vec<Note>,
    ) -> Result<(std::sync::Arc<Instance>, HashMap<String, Arg>), Error> {
        let known = self
            .reads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&shapes)
            .cloned();
        if let Some(reads) = known {
            let (key, outputs) = key(shapes.clone(), &reads, tensors, computed)?;
            let instance = self.instances.get_or_build(key, || {
                let instance = self.build(&shapes, tensors, computed, notes)?;
                if !reads.fits(&instance) {
                    return Err(Error::Internal(
                        "two imports of one set of input shapes read different values".to_string(),
                    ));
                }
                Ok(instance)
            })?;
            let steps = step_args(&instance, outputs);
            return Ok((instance, steps));
        }
        let instance = self.build(&shapes, tensors, computed, notes)?;
        let reads = instance.reads.clone();
        self.reads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(shapes.clone(), reads.clone());
        let (key, outputs) = key(shapes, &reads, tensors, computed)?;
        let instance = self.instances.get_or_build(key, || Ok(instance))?;
        let steps = step_args(&instance, outputs);
        Ok((instance, steps))
    }

    /// The model imported and compiled for input `shapes`; `tensors` are
    /// the run's inputs (none when the model is compiled as it opens): the
    /// import reads the short ones' values where an operator needs
    /// a constant, and the interpreter locates with them a program error
    /// that compiling finds.
    fn build(
        &self,
        shapes: &[Vec<usize>],
        tensors: &[Tensor],
        computed: &HashMap<String, Tensor>,
        notes: &mut Vec<Note>,
    ) -> Result<Instance, Error> {
        let first = (!tensors.is_empty()).then_some(tensors);
        let by_name: HashMap<String, Vec<usize>> = self
            .signature
            .inputs
            .iter()
            .map(|i| i.name.clone())
            .zip(shapes.iter().cloned())
            .collect();
        let values: HashMap<String, Tensor> = self
            .signature
            .inputs
            .iter()
            .zip(tensors)
            .filter(|(_, t)| t.len() <= crate::bind::SHAPE_LIKE_MOST)
            .map(|(i, t)| (i.name.clone(), t.clone()))
            .chain(computed.iter().map(|(n, t)| (n.clone(), t.clone())))
            .collect();
        let mut source =
            Source::load_onnx_part(&self.path, &self.part, None, &self.sizes, &by_name, &values)?;
        let specialized = source
            .model
            .as_ref()
            .map(|m| {
                self.signature
                    .inputs
                    .iter()
                    .enumerate()
                    .filter(|(_, i)| m.specialized.contains(&i.name))
                    .map(|(k, _)| k)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(options) = &self.optimize {
            // The import bound every size: the model def has none.
            let found = crate::optimize::optimize_cached(
                &source,
                None,
                &HashMap::new(),
                options,
                &mut |_| {},
            )?;
            source.replace_program(found.program, onnx::MODEL_DEF);
        }
        let mut weights = source.take_weights();
        let (computed_read, steps) = source
            .model
            .as_ref()
            .map(|m| (m.computed_read.clone(), m.steps.clone()))
            .unwrap_or_default();
        // The steps' weights are arguments of each run, not constants of
        // the program: the next run's step outputs take their place.
        let mut step_weights = HashMap::new();
        for name in steps.iter().flat_map(|s| &s.weights) {
            if let Some(w) = weights.remove(name) {
                step_weights.insert(name.clone(), w);
            }
        }
        let params = self
            .signature
            .inputs
            .iter()
            .map(|i| source.parameter_of(&i.name))
            .collect::<Result<Vec<_>, Error>>()?;
        let def = source.pick_def(None)?;
        let first = first.map(|t| {
            let mut args = args_of(&params, t.to_vec());
            args.extend(step_weights.clone());
            args
        });
        let no_sizes = HashMap::new();
        let spec = Specialized::build(
            &source,
            def,
            &no_sizes,
            weights,
            &self.setup,
            first.as_ref().map(|a| (a, &no_sizes)),
            notes,
        )?;
        Ok(Instance {
            source,
            spec,
            params,
            reads: Reads {
                inputs: specialized,
                computed: computed_read,
                steps,
            },
            step_params: step_weights.into_keys().collect(),
        })
    }
}

impl Instance {
    /// The model def's arguments: `tensors`, in declared order.
    fn args(&self, tensors: Vec<Tensor>) -> HashMap<String, Arg> {
        args_of(&self.params, tensors)
    }
}

/// The key of the instance for input `shapes` that reads `reads`: from
/// the run's inputs `tensors` and the values `computed` of the tensors the
/// model computes; and the outputs of the runtime steps, whose shapes are
/// in the key.
fn key(
    shapes: Vec<Vec<usize>>,
    reads: &Reads,
    tensors: &[Tensor],
    computed: &HashMap<String, Tensor>,
) -> Result<(InstanceKey, Vec<Vec<Tensor>>), Error> {
    let missing = |name: &str| {
        Error::Internal(format!(
            "the value of `{name}`, which the import read, was not computed"
        ))
    };
    let inputs = reads
        .inputs
        .iter()
        .map(|&k| (k, exact_values(&tensors[k])))
        .collect();
    let read = reads
        .computed
        .iter()
        .map(|name| {
            let t = computed.get(name).ok_or_else(|| missing(name))?;
            Ok((name.clone(), exact_values(t)))
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let outputs = reads
        .steps
        .iter()
        .map(|s| {
            let t = computed.get(&s.input).ok_or_else(|| missing(&s.input))?;
            (s.compute)(t).map_err(|message| Error::Run {
                def: onnx::MODEL_DEF.to_string(),
                message,
                rendered: None,
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let step_shapes = outputs
        .iter()
        .flatten()
        .map(|t| t.shape().to_vec())
        .collect();
    Ok(((shapes, inputs, read, step_shapes), outputs))
}

/// The arguments that pass the runtime steps' `outputs` to `instance`'s
/// def, for the weights that hold them.
fn step_args(instance: &Instance, outputs: Vec<Vec<Tensor>>) -> HashMap<String, Arg> {
    instance
        .reads
        .steps
        .iter()
        .zip(outputs)
        .flat_map(|(s, o)| s.weights.iter().cloned().zip(o))
        .filter(|(name, _)| instance.step_params.contains(name))
        .map(|(name, t)| (name, Arg::Tensor(t)))
        .collect()
}

/// The values of `t` as integers that tell every two values apart: an
/// integer itself, a float's bits.
fn exact_values(t: &Tensor) -> Vec<i64> {
    if t.dtype().is_float() {
        t.to_f64_vec().iter().map(|x| x.to_bits() as i64).collect()
    } else {
        t.to_i64_vec()
    }
}

/// The model def's arguments: each input's tensor as its parameter (an
/// input the def does not take, one with an empty dimension, is left out).
fn args_of(params: &[Option<String>], tensors: Vec<Tensor>) -> HashMap<String, Arg> {
    params
        .iter()
        .cloned()
        .zip(tensors.into_iter().map(Arg::Tensor))
        .filter_map(|(p, t)| Some((p?, t)))
        .collect()
}

/// `` `a`, `b` `` for messages.
fn listed<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> String {
    names
        .into_iter()
        .map(|n| format!("`{}`", n.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}
