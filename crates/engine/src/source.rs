//! A loaded program: TC text checked, or an ONNX model imported and
//! checked with the operator prelude. It keeps the file name and text so
//! that errors found later (by the interpreter) are located in it, and, for
//! a model, the ports (the model's input and output names beside the
//! model def's parameters) and the weights as arguments.
//!
//! Guarantees: a `Source` holds a program that passed `tc::check_source`,
//! or, once [`Source::replace_program`] gave it one, an optimizer's result
//! for such a program (proved equal to it); every error is an [`Error`]
//! naming the file.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use interp::Arg;
use ir::{Def, Program};

use crate::bind::Sizes;
use crate::Error;

/// A checked program and where it came from.
#[derive(Debug)]
pub struct Source {
    /// The file name, as messages show it.
    pub name: String,
    /// The text that was checked (for a model, the prelude and the model
    /// def).
    pub text: String,
    pub checked: tc::Checked,
    /// For an ONNX model: its ports.
    pub model: Option<Ports>,
    /// For an ONNX model: the constants its def takes as parameters.
    weights: HashMap<String, Arg>,
    /// How many of the program's defs come first from the operator
    /// prelude (a TC file that calls its operators is checked after it);
    /// the file's own defs follow.
    pub prelude_defs: usize,
}

/// An imported model's inputs and outputs: the model's names beside the
/// model def's parameters.
#[derive(Clone, Debug)]
pub struct Ports {
    pub inputs: Vec<onnx::Port>,
    pub outputs: Vec<onnx::Port>,
    /// For each statement of the model def, the node it comes from
    /// (`onnx::Model::nodes`).
    pub nodes: Vec<Option<String>>,
    /// The weights the import packed into kernel layouts, once.
    pub packing: onnx::Packing,
    /// The inputs whose values the import was specialized on
    /// (`onnx::Model::specialized`).
    pub specialized: Vec<String>,
    /// The inputs with an empty dimension, which the model def does not
    /// take (`onnx::Model::empty`).
    pub empty: Vec<onnx::Port>,
    /// The tensors the model computes whose values the import read
    /// (`onnx::Model::computed_read`).
    pub computed_read: Vec<String>,
    /// The runtime steps (`onnx::Model::steps`).
    pub steps: Vec<onnx::Step>,
}

/// Reads a text file: its name as messages show it, and its text.
pub fn read_text(path: &Path) -> Result<(String, String), Error> {
    let name = path.display().to_string();
    let bytes =
        tensor::file::read_limited(path, tensor::file::TEXT_LIMIT).map_err(|e| Error::Read {
            path: name.clone(),
            message: format!("cannot read `{name}`: {e}"),
        })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        Error::Read {
            path: name.clone(),
            message: format!("`{name}` is not valid UTF-8 (byte {at})"),
        }
    })?;
    Ok((name, text))
}

impl Source {
    /// Checks TC `text` read from the file `name`. A file that calls an
    /// operator of the prelude (`ops/prelude.tc`: `Y = matmul(A, B)`)
    /// without defining it is checked after the prelude; its diagnostics
    /// and statement spans stay located in the file's own text.
    pub fn tc(name: String, text: String) -> Result<Source, Error> {
        let diagnostics = match tc::check_source(&text) {
            Ok(checked) => {
                return Ok(Source {
                    name,
                    text,
                    checked,
                    model: None,
                    weights: HashMap::new(),
                    prelude_defs: 0,
                })
            }
            Err(d) => d,
        };
        let calls_prelude = diagnostics.iter().any(|d| {
            d.message
                .strip_prefix("call of unknown def `")
                .and_then(|rest| rest.strip_suffix('`'))
                .is_some_and(|callee| onnx::PRELUDE.contains(&format!("def {callee}(")))
        });
        if !calls_prelude {
            return Err(Error::Source(tc::render_diagnostics(
                &diagnostics,
                &name,
                &text,
            )));
        }
        let offset = onnx::PRELUDE.len() + 1;
        let whole = format!("{}\n{text}", onnx::PRELUDE);
        let own = |span: tc::Span| {
            (span.start >= offset).then(|| tc::Span {
                start: span.start - offset,
                end: span.end - offset,
            })
        };
        let mut checked = tc::check_source(&whole).map_err(|ds| {
            // Every diagnostic is in the file's own text: the prelude
            // checks alone (the engine's tests check it).
            let ds: Vec<tc::Diagnostic> = ds
                .into_iter()
                .filter_map(|mut d| {
                    d.span = own(d.span)?;
                    d.extra
                        .retain_mut(|l| own(l.span).map(|s| l.span = s).is_some());
                    Some(d)
                })
                .collect();
            Error::Source(tc::render_diagnostics(&ds, &name, &text))
        })?;
        checked.stmt_spans = std::mem::take(&mut checked.stmt_spans)
            .into_iter()
            .filter_map(|(k, s)| Some((k, own(s)?)))
            .collect();
        checked.def_spans = std::mem::take(&mut checked.def_spans)
            .into_iter()
            .filter_map(|(k, s)| Some((k, own(s)?)))
            .collect();
        let prelude_defs = checked
            .program
            .defs
            .iter()
            .take_while(|d| !checked.def_spans.contains_key(&d.name))
            .count();
        Ok(Source {
            name,
            text,
            checked,
            model: None,
            weights: HashMap::new(),
            prelude_defs,
        })
    }

    /// A program another frontend produced (the imperative one's), with
    /// its printed text standing for the source.
    pub fn converted(name: String, text: String, program: Program) -> Source {
        Source {
            name,
            text,
            checked: tc::Checked {
                program,
                stmt_spans: HashMap::new(),
                def_spans: HashMap::new(),
                equivalences: Vec::new(),
            },
            model: None,
            weights: HashMap::new(),
            prelude_defs: 0,
        }
    }

    /// The file's own defs (for a model, its def).
    pub fn own_defs(&self) -> &[Def] {
        &self.program().defs[self.prelude_defs..]
    }

    /// Reads and checks the TC file at `path`.
    pub fn read_tc(path: &Path) -> Result<Source, Error> {
        let (name, text) = read_text(path)?;
        Source::tc(name, text)
    }

    /// Loads and imports the ONNX model at `path`. Symbolic input
    /// dimensions are bound by `sizes`, else read off `input_shapes` (the
    /// shapes of the tensors the caller will pass, by the model's input
    /// names); `input_values` are values the caller will pass, which the
    /// import reads where an operator needs a constant
    /// ([`Ports::specialized`]), and may hold values of tensors the model
    /// computes, found by running the model up to them
    /// ([`Error::NeedsComputed`] names those the import needs).
    /// `def` is the def the caller asked for: a model has one, so any name
    /// is an error.
    pub fn load_onnx(
        path: &Path,
        def: Option<&str>,
        sizes: &Sizes,
        input_shapes: &HashMap<String, Vec<usize>>,
        input_values: &HashMap<String, tensor::Tensor>,
    ) -> Result<Source, Error> {
        Source::load_onnx_part(path, &[], def, sizes, input_shapes, input_values)
    }

    /// [`Source::load_onnx`] of the part of the model that computes the
    /// tensors `part` (by ONNX name; the whole model when empty), which
    /// are its outputs ([`onnx::cut`]).
    pub fn load_onnx_part(
        path: &Path,
        part: &[String],
        def: Option<&str>,
        sizes: &Sizes,
        input_shapes: &HashMap<String, Vec<usize>>,
        input_values: &HashMap<String, tensor::Tensor>,
    ) -> Result<Source, Error> {
        if def.is_some() {
            return Err(no_def_for_model());
        }
        let mut loaded = onnx::load(path)?;
        if !part.is_empty() {
            onnx::cut(&mut loaded, part)?;
        }
        let mut model = onnx::import_loaded(loaded, sizes, input_shapes, input_values)?;
        // The weights move into the arguments: one copy of them, not two.
        let weights = std::mem::take(&mut model.weights)
            .into_iter()
            .map(|(n, t)| (n, Arg::Tensor(t)))
            .collect();
        // The importer checked the prelude and the model def; checking them
        // again took as long as the rest of a warm start.
        let mut source = Source {
            name: path.display().to_string(),
            text: model.text,
            checked: model.checked,
            model: None,
            weights: HashMap::new(),
            prelude_defs: 0,
        };
        source.model = Some(Ports {
            inputs: model.inputs,
            outputs: model.outputs,
            nodes: model.nodes,
            packing: model.packing,
            specialized: model.specialized,
            empty: model.empty,
            computed_read: model.computed_read,
            steps: model.steps,
        });
        source.weights = weights;
        Ok(source)
    }

    pub fn program(&self) -> &Program {
        &self.checked.program
    }

    /// Replaces the program by `program`, where def `def` is an
    /// optimizer's result (of the same signature, and the defs it calls
    /// that the search generated). Its statements are not the file's, so
    /// the old def's statement locations (and a model's node names) are
    /// dropped: an error in it is reported in the def, not at a line.
    pub fn replace_program(&mut self, program: Program, def: &str) {
        self.checked.program = program;
        // The program may now hold the prelude (a search works over its
        // operators) and generated defs before the def: the file's own
        // defs are still those after the defs it did not write.
        if self.model.is_none() {
            self.prelude_defs = self
                .checked
                .program
                .defs
                .iter()
                .take_while(|d| !self.checked.def_spans.contains_key(&d.name))
                .count();
        }
        self.checked.stmt_spans.retain(|(d, _), _| d != def);
        if let Some(ports) = self.model.as_mut().filter(|_| def == onnx::MODEL_DEF) {
            ports.nodes.clear();
        }
    }

    /// The def named `want`; with no name, the program's only def. For a
    /// model, its def ([`onnx::MODEL_DEF`]), which no name may choose.
    pub fn pick_def(&self, want: Option<&str>) -> Result<&Def, Error> {
        if self.model.is_some() {
            if want.is_some() {
                return Err(no_def_for_model());
            }
            return pick_def(self.program(), Some(onnx::MODEL_DEF), &self.name);
        }
        if want.is_none() && self.prelude_defs > 0 {
            if let [only] = self.own_defs() {
                return Ok(only);
            }
            let names: Vec<String> = self
                .own_defs()
                .iter()
                .map(|d| format!("`{}`", d.name))
                .collect();
            return Err(Error::Usage(format!(
                "`{}` has several defs; choose one with `--def`\n  = help: its defs are {}",
                self.name,
                names.join(", ")
            )));
        }
        pick_def(self.program(), want, &self.name)
    }

    /// The names of the model def's parameters that are its weights, the
    /// constants a search may take them for (none for TC source, or when
    /// taken before; a runtime step's weights are not constants).
    pub fn weight_names(&self) -> BTreeSet<String> {
        // A runtime step's weights hold this run's values only: the next
        // run passes others, so no search may take them as constants.
        let steps: BTreeSet<&String> = self
            .model
            .iter()
            .flat_map(|m| m.steps.iter().flat_map(|s| &s.weights))
            .collect();
        self.weights
            .keys()
            .filter(|w| !steps.contains(w))
            .cloned()
            .collect()
    }

    /// The weights of a model as arguments of its def, moved out (none for
    /// TC source, or when taken before).
    pub fn take_weights(&mut self) -> HashMap<String, Arg> {
        std::mem::take(&mut self.weights)
    }

    /// The model def's parameter for the model's input `name`; for TC
    /// source, `name` itself; `None` for an input with an empty dimension,
    /// which the model def does not take.
    pub fn parameter_of(&self, name: &str) -> Result<Option<String>, Error> {
        let Some(ports) = &self.model else {
            return Ok(Some(name.to_string()));
        };
        if ports.empty.iter().any(|p| p.onnx == name) {
            return Ok(None);
        }
        match ports.inputs.iter().find(|p| p.onnx == name) {
            Some(p) => Ok(Some(p.tc.clone())),
            None => {
                let names: Vec<String> = ports
                    .inputs
                    .iter()
                    .map(|p| format!("`{}`", p.onnx))
                    .collect();
                Err(Error::Input {
                    name: name.to_string(),
                    message: format!(
                        "the model has no input `{name}`\n  = help: its inputs are {}",
                        names.join(", ")
                    ),
                })
            }
        }
    }

    /// The name callers know output `tc` by: the model's for a model, else
    /// the def's.
    pub fn output_name(&self, tc: &str) -> String {
        self.model
            .as_ref()
            .and_then(|m| m.outputs.iter().find(|p| p.tc == tc))
            .map_or_else(|| tc.to_string(), |p| p.onnx.clone())
    }
}

fn no_def_for_model() -> Error {
    Error::Usage("`--def` does not apply to an ONNX model".to_string())
}

/// The def named `want` of `program` (read from the file `file`); with no
/// name, the program's only def.
pub fn pick_def<'p>(
    program: &'p Program,
    want: Option<&str>,
    file: &str,
) -> Result<&'p Def, Error> {
    let names = || {
        program
            .defs
            .iter()
            .map(|d| format!("`{}`", d.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match want {
        Some(n) => program.def(n).ok_or_else(|| {
            Error::Usage(format!(
                "`{file}` has no def `{n}`\n  = help: its defs are {}",
                names()
            ))
        }),
        None if program.defs.len() == 1 => Ok(&program.defs[0]),
        None if program.defs.is_empty() => Err(Error::Usage(format!("`{file}` has no defs"))),
        None => Err(Error::Usage(format!(
            "`{file}` has several defs; choose one with `--def`\n  = help: its defs are {}",
            names()
        ))),
    }
}
