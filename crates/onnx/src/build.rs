//! The model def being written: its parameters (graph inputs and the
//! constants operators read as tensors), its statements (calls of prelude
//! defs and of generated ones, `forms.rs`, one per operator application)
//! and the values of ONNX names.
//!
//! Every ONNX value is either a constant, known at import (initializers,
//! `Constant` nodes, and everything computed from constants alone, such as
//! the shape subgraphs PyTorch exports), or a variable: a tensor of the
//! model def with its element type and concrete shape, which the importer
//! tracks itself to choose prelude variants and check attributes.

use std::collections::HashMap;

use ir::DType;
use tensor::Tensor;

use crate::forms::Forms;
use crate::proto::{attribute_type, AttributeProto, NodeProto};

/// A tensor of the model def.
#[derive(Clone, Debug, PartialEq)]
pub struct Var {
    /// Its TC name.
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<usize>,
}

/// An ONNX value.
#[derive(Clone, Debug)]
pub enum Value {
    Const(Tensor),
    Var(Var),
}

impl Value {
    pub fn dtype(&self) -> DType {
        match self {
            Value::Const(t) => t.dtype(),
            Value::Var(v) => v.dtype,
        }
    }

    pub fn shape(&self) -> &[usize] {
        match self {
            Value::Const(t) => t.shape(),
            Value::Var(v) => &v.shape,
        }
    }
}

/// A scalar argument of a call, as TC source.
pub fn int(v: i64) -> String {
    v.to_string()
}

/// A float scalar argument: an exact decimal literal of its value, or, for
/// the values TC has no literal for, the division that makes it.
pub fn float(v: f64) -> String {
    if v.is_nan() {
        return "0.0 / 0.0".to_string();
    }
    if v.is_infinite() {
        return format!("{}1.0 / 0.0", if v < 0.0 { "-" } else { "" });
    }
    let s = format!("{v:?}");
    if s.contains(['.', 'e', 'E']) {
        s
    } else {
        format!("{s}.0")
    }
}

/// Weights rearranged into a kernel's layout at import (the channel-blocked
/// convolutions' packing, `ops/blocked.rs`): done once, when the model is
/// loaded, never per run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Packing {
    /// Tensors packed.
    pub tensors: usize,
    /// Their bytes, packed.
    pub bytes: u64,
    /// The time the packing took, in seconds.
    pub seconds: f64,
}

impl Packing {
    /// Counts `t`, packed in `seconds`.
    pub fn add(&mut self, t: &Tensor, seconds: f64) {
        self.tensors += 1;
        self.bytes += bytes(t);
        self.seconds += seconds;
    }

    /// Uncounts `t`, packed but no longer a parameter (folded into
    /// another); its packing time stays spent.
    pub fn remove(&mut self, t: &Tensor) {
        self.tensors -= 1;
        self.bytes -= bytes(t);
    }
}

/// The bytes `t`'s elements take.
fn bytes(t: &Tensor) -> u64 {
    t.len() as u64 * u64::from(t.dtype().bits().max(8) / 8)
}

/// The model def under construction.
#[derive(Debug, Default)]
pub struct Builder {
    /// Parameter declarations, in order (`float32(1, 3) x`).
    pub params: Vec<String>,
    /// The constants passed as parameters, by TC name.
    pub weights: Vec<(String, Tensor)>,
    pub stmts: Vec<String>,
    /// Constants already made parameters, by ONNX name.
    weight_of: HashMap<String, Var>,
    /// The shapes the importer expects each statement's result to have,
    /// checked against the TC checker's after the def is built.
    pub expected: Vec<Var>,
    /// The defs generated for the forms the statements call.
    pub forms: Forms,
    /// The weights packed so far.
    pub packing: Packing,
    next: usize,
}

impl Builder {
    /// A fresh TC name with `prefix`.
    pub fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("_{prefix}{}", self.next)
    }

    /// Declares a parameter.
    pub fn param(&mut self, name: &str, dtype: DType, shape: &[usize]) -> Var {
        let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
        self.params
            .push(format!("{}({}) {name}", dtype.name(), dims.join(", ")));
        Var {
            name: name.to_string(),
            dtype,
            shape: shape.to_vec(),
        }
    }

    /// The parameter holding constant `key` (an ONNX name), made once.
    pub fn weight(&mut self, key: &str, t: &Tensor) -> Var {
        if let Some(v) = self.weight_of.get(key) {
            return v.clone();
        }
        let name = self.fresh("w");
        let v = self.param(&name, t.dtype(), t.shape());
        self.weights.push((name, t.clone()));
        self.weight_of.insert(key.to_string(), v.clone());
        v
    }

    /// Removes constant parameter `name` when no statement reads it any
    /// more (its values folded into another weight), returning its tensor.
    pub fn drop_unread_weight(&mut self, name: &str) -> Option<Tensor> {
        let is_name = |c: char| c.is_alphanumeric() || c == '_';
        let read = self
            .stmts
            .iter()
            .any(|s| s.split(|c: char| !is_name(c)).any(|token| token == name));
        if read {
            return None;
        }
        let k = self.weights.iter().position(|(w, _)| w == name)?;
        let (_, t) = self.weights.remove(k);
        let declared = format!(" {name}");
        self.params.retain(|p| !p.ends_with(&declared));
        self.weight_of.retain(|_, v| v.name != name);
        Some(t)
    }

    /// Adds `result = def(tensors..., scalars...)` and returns the result,
    /// whose type and shape the caller computed.
    pub fn call(
        &mut self,
        def: &str,
        tensors: &[&Var],
        scalars: &[String],
        dtype: DType,
        shape: Vec<usize>,
    ) -> Var {
        let name = self.fresh("t");
        let args: Vec<String> = tensors
            .iter()
            .map(|v| v.name.clone())
            .chain(scalars.iter().cloned())
            .collect();
        self.stmts
            .push(format!("{name} = {def}({})", args.join(", ")));
        let v = Var { name, dtype, shape };
        self.expected.push(v.clone());
        v
    }

    /// Adds `(r1, r2, ...) = def(tensors..., scalars...)` for a def with
    /// several results, whose types and shapes the caller computed.
    pub fn call_many(
        &mut self,
        def: &str,
        tensors: &[&Var],
        scalars: &[String],
        results: Vec<(DType, Vec<usize>)>,
    ) -> Vec<Var> {
        let vars: Vec<Var> = results
            .into_iter()
            .map(|(dtype, shape)| Var {
                name: self.fresh("t"),
                dtype,
                shape,
            })
            .collect();
        let args: Vec<String> = tensors
            .iter()
            .map(|v| v.name.clone())
            .chain(scalars.iter().cloned())
            .collect();
        let names: Vec<&str> = vars.iter().map(|v| v.name.as_str()).collect();
        self.stmts.push(format!(
            "({}) = {def}({})",
            names.join(", "),
            args.join(", ")
        ));
        self.expected.extend(vars.iter().cloned());
        vars
    }

    /// Adds a comprehension copying `from` into a new tensor (an output that
    /// is an input, a constant, or another output).
    pub fn copy(&mut self, from: &Var) -> Var {
        let ix: Vec<String> = (0..from.shape.len()).map(|k| format!("_i{k}")).collect();
        let rhs = format!("{}({})", from.name, ix.join(", "));
        self.compute("=", &rhs, &[], from.dtype, from.shape.clone())
    }

    /// Adds a comprehension computing a new tensor of `dtype` and `shape`,
    /// `t(_i0, _i1, ...) reduction rhs where _i0 in 0:d0, ..., extra`: `rhs`
    /// reads the point through `_i0`, `_i1`, ... and may name what `extra`
    /// binds (reduction ranges, `let`s).
    ///
    /// A sum or product of `float16` accumulates in `float32` and rounds
    /// once to `dtype` at the end, as numpy's (and so the ONNX
    /// reference's) do; `bfloat16` and the 8-bit floats round at every
    /// step, as `ml_dtypes`' do.
    pub fn compute(
        &mut self,
        reduction: &str,
        rhs: &str,
        extra: &[String],
        dtype: DType,
        shape: Vec<usize>,
    ) -> Var {
        if dtype == DType::F16 && (reduction.starts_with('+') || reduction.starts_with('*')) {
            let wide = self.compute(
                reduction,
                &format!("float32({rhs})"),
                extra,
                DType::F32,
                shape,
            );
            let ix: Vec<String> = (0..wide.shape.len()).map(|k| format!("_i{k}")).collect();
            let rounded = format!("{}({}({}))", dtype.name(), wide.name, ix.join(", "));
            return self.compute("=", &rounded, &[], dtype, wide.shape);
        }
        let name = self.fresh("t");
        let ix: Vec<String> = (0..shape.len()).map(|k| format!("_i{k}")).collect();
        let bindings: Vec<String> = ix
            .iter()
            .zip(&shape)
            .map(|(i, n)| format!("{i} in 0:{n}"))
            .chain(extra.iter().cloned())
            .collect();
        let wher = if bindings.is_empty() {
            String::new()
        } else {
            format!(" where {}", bindings.join(", "))
        };
        self.stmts
            .push(format!("{name}({}) {reduction} {rhs}{wher}", ix.join(", ")));
        let v = Var { name, dtype, shape };
        self.expected.push(v.clone());
        v
    }
}

/// A node being imported: its protobuf, a name for messages, and its
/// attributes, each of which must be read by the operator's importer
/// (`finish` reports any other as unsupported).
#[derive(Debug)]
pub struct Node<'a> {
    pub proto: &'a NodeProto,
    pub op: &'a str,
    /// `node `name` (Op)`, for messages.
    pub label: String,
    read: std::cell::RefCell<Vec<String>>,
}

impl<'a> Node<'a> {
    pub fn new(proto: &'a NodeProto, index: usize) -> Node<'a> {
        let op = proto.op_type.as_deref().unwrap_or("");
        let name = match proto.name.as_deref() {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => format!("#{index}"),
        };
        Node {
            proto,
            op,
            label: format!("node `{name}` ({op})"),
            read: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// An error about this node.
    pub fn error(&self, msg: impl std::fmt::Display) -> String {
        format!("{}: {msg}", self.label)
    }

    fn attr(&self, name: &str) -> Option<&'a AttributeProto> {
        self.read.borrow_mut().push(name.to_string());
        self.proto
            .attribute
            .iter()
            .find(|a| a.name.as_deref() == Some(name))
    }

    fn typed(
        &self,
        name: &str,
        want: i32,
        what: &str,
    ) -> Result<Option<&'a AttributeProto>, String> {
        match self.attr(name) {
            Some(a) if a.r#type.is_some_and(|t| t != want) => Err(self.error(format!(
                "attribute `{name}` should be {what}, but has type code {}",
                a.r#type.unwrap_or(0)
            ))),
            a => Ok(a),
        }
    }

    pub fn int(&self, name: &str) -> Result<Option<i64>, String> {
        Ok(self
            .typed(name, attribute_type::INT, "an integer")?
            .and_then(|a| a.i))
    }

    pub fn float(&self, name: &str) -> Result<Option<f32>, String> {
        Ok(self
            .typed(name, attribute_type::FLOAT, "a float")?
            .and_then(|a| a.f))
    }

    pub fn ints(&self, name: &str) -> Result<Option<Vec<i64>>, String> {
        Ok(self
            .typed(name, attribute_type::INTS, "a list of integers")?
            .map(|a| a.ints.clone()))
    }

    pub fn strings(&self, name: &str) -> Result<Option<Vec<String>>, String> {
        Ok(self
            .typed(name, attribute_type::STRINGS, "a list of strings")?
            .map(|a| {
                a.strings
                    .iter()
                    .map(|s| String::from_utf8_lossy(s).into_owned())
                    .collect()
            }))
    }

    pub fn floats(&self, name: &str) -> Result<Option<Vec<f32>>, String> {
        Ok(self
            .typed(name, attribute_type::FLOATS, "a list of floats")?
            .map(|a| a.floats.clone()))
    }

    pub fn string(&self, name: &str) -> Result<Option<String>, String> {
        Ok(self
            .typed(name, attribute_type::STRING, "a string")?
            .and_then(|a| a.s.as_ref())
            .map(|s| String::from_utf8_lossy(s).into_owned()))
    }

    pub fn tensor(&self, name: &str) -> Result<Option<&'a crate::proto::TensorProto>, String> {
        Ok(self
            .typed(name, attribute_type::TENSOR, "a tensor")?
            .and_then(|a| a.t.as_ref()))
    }

    /// Fails on any attribute the importer did not read: an attribute
    /// tessera does not know is never silently ignored.
    /// Counts as read every attribute `other` (a copy of this node) read.
    pub fn mark_read(&self, other: &Node) {
        self.read
            .borrow_mut()
            .extend(other.read.borrow().iter().cloned());
    }

    pub fn finish(&self) -> Result<(), String> {
        let read = self.read.borrow();
        for a in &self.proto.attribute {
            let name = a.name.as_deref().unwrap_or("");
            if !read.iter().any(|r| r == name) {
                return Err(self.error(format!("attribute `{name}` is not supported")));
            }
        }
        Ok(())
    }

    /// The name of input `k`, `None` when absent or empty (omitted).
    pub fn input(&self, k: usize) -> Option<&'a str> {
        self.proto
            .input
            .get(k)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    /// The number of outputs the model uses (trailing empty names omitted).
    pub fn outputs(&self) -> usize {
        self.proto
            .output
            .iter()
            .rposition(|o| !o.is_empty())
            .map_or(0, |k| k + 1)
    }
}
