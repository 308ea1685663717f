//! An ONNX model loaded once and run many times, as ONNX Runtime's
//! `InferenceSession` is: its declared inputs and outputs, and a run that
//! takes tensors by input name and gives the outputs asked for. The model
//! is imported and compiled once per set of input shapes
//! ([`Specializations`]); with every input dimension fixed (or bound by
//! the given sizes) that happens when the model is opened, so that a model
//! tessera cannot run is refused there; a model with symbolic inputs is
//! checked there for operators tessera does not support.
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
    /// For each set of input shapes imported, the positions of the inputs
    /// whose values the import reads.
    specialized: std::sync::Mutex<HashMap<Vec<Vec<usize>>, Vec<usize>>>,
}

/// What an instance is built for: the input shapes (in declared order),
/// and the values of the inputs its import was specialized on (by
/// position).
type InstanceKey = (Vec<Vec<usize>>, Vec<(usize, Vec<i64>)>);

/// The model imported and compiled for one set of input shapes.
#[derive(Debug)]
struct Instance {
    source: Source,
    spec: Specialized,
    /// The model def's parameter for each declared input (`None` for one
    /// with an empty dimension, which the def does not take).
    params: Vec<Option<String>>,
    /// The positions of the inputs whose values the import read as
    /// constants (`onnx::Model::specialized`).
    specialized: Vec<usize>,
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
        crate::bind::check_positive(&sizes)?;
        if let Some(o) = &optimize {
            o.search.check().map_err(Error::Usage)?;
        }
        let loaded = onnx::load(path)?;
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
            specialized: Default::default(),
        };
        if let Some(shapes) = model.static_shapes() {
            // A model whose import needs an input's value is compiled at
            // its first run, when the value is known.
            match model.instance(shapes, &[], notes) {
                Ok(_) | Err(Error::NeedsValue(_)) => {}
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
    /// shapes and values of the inputs the import takes as constants.
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
        let instance = self.instance(shapes, &tensors, notes)?;
        let args = instance.args(tensors);
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
    /// from the cache or now. The first import at a set of shapes finds out
    /// which inputs it reads (usually none), and the instances of those
    /// shapes are kept by those inputs' values too.
    fn instance(
        &self,
        shapes: Vec<Vec<usize>>,
        tensors: &[Tensor],
        notes: &mut Vec<Note>,
    ) -> Result<std::sync::Arc<Instance>, Error> {
        let values = |positions: &[usize]| -> Vec<(usize, Vec<i64>)> {
            positions
                .iter()
                .map(|&k| (k, exact_values(&tensors[k])))
                .collect()
        };
        let known = self
            .specialized
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&shapes)
            .cloned();
        if let Some(positions) = known {
            let key = (shapes.clone(), values(&positions));
            return self
                .instances
                .get_or_build(key, || self.build(&shapes, tensors, notes));
        }
        let instance = self.build(&shapes, tensors, notes)?;
        self.specialized
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(shapes.clone(), instance.specialized.clone());
        let key = (shapes, values(&instance.specialized));
        self.instances.get_or_build(key, || Ok(instance))
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
            .collect();
        let mut source = Source::load_onnx(&self.path, None, &self.sizes, &by_name, &values)?;
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
        let weights = source.take_weights();
        let params = self
            .signature
            .inputs
            .iter()
            .map(|i| source.parameter_of(&i.name))
            .collect::<Result<Vec<_>, Error>>()?;
        let def = source.pick_def(None)?;
        let first = first.map(|t| args_of(&params, t.to_vec()));
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
            specialized,
        })
    }
}

impl Instance {
    /// The model def's arguments: `tensors`, in declared order.
    fn args(&self, tensors: Vec<Tensor>) -> HashMap<String, Arg> {
        args_of(&self.params, tensors)
    }
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
