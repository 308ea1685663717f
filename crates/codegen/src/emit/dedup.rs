//! Step functions as C text, and one function shared by all the steps whose
//! text is the same.
//!
//! A step function takes the buffers its step uses as `args`, in the order
//! its body first mentions them, and names them and its local arrays by
//! number (`func.rs`), so its text depends on what the step computes, not
//! on the names of the kernel's buffers. The comments that do name buffers,
//! blocks and steps are kept only in the readable text; the compiled text
//! has none. A function's key is the hash of its compiled text (less its
//! name) and its parameters, each argument's element type, length and
//! whether it is written, which the loader checks the buffers it passes
//! against; steps whose
//! functions have the same key call one function, named `PREFIX_f` and the
//! first 16 hex digits of the key.
//!
//! Guarantees: the same text and parameters get the same symbol in every
//! program, so the translation units made of them are cache hits across
//! programs; steps share a function only when their keys, which cover
//! everything the function's code and safety depend on, are equal. Two
//! different functions whose keys agree in the 16 digits (odds about 2^-64
//! per pair) would define one symbol twice, which the C compiler refuses
//! when they meet in one unit; in different units each is resolved in its
//! own.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::func::{arg_name, Func};
use super::{scalar, CFunction, Param};
use crate::cache::hash_parts;

/// Versions the text a key covers: a change in the form of step functions
/// changes it.
const KEY_VERSION: &str = "tessera step function 1";

/// A distinct step function and what the readable C says about it.
pub(super) struct Distinct {
    pub(super) function: CFunction,
    /// The key: 64 hex digits.
    pub(super) key: String,
    /// The function with the comments of the first step that calls it.
    pub(super) readable: String,
    /// The first step that calls it.
    pub(super) first_step: usize,
}

/// The distinct step functions of a program, in the order steps first
/// call them.
pub(super) struct Functions {
    prefix: String,
    pub(super) distinct: Vec<Distinct>,
    by_key: HashMap<String, usize>,
}

impl Functions {
    pub(super) fn new(prefix: &str) -> Functions {
        Functions {
            prefix: prefix.to_string(),
            distinct: Vec::new(),
            by_key: HashMap::new(),
        }
    }

    /// The function of step `step`, emitted as `f` with `params` (one
    /// per argument of `f.args`): an index into `distinct`, shared with
    /// every earlier step of the same text.
    pub(super) fn add(
        &mut self,
        step: usize,
        f: &Func,
        params: Vec<Param>,
        parallel: bool,
    ) -> usize {
        let compiled = body(f, &params, parallel, false);
        let key = hash_parts(&[KEY_VERSION, &params_text(&params), &compiled]);
        if let Some(&k) = self.by_key.get(&key) {
            return k;
        }
        let symbol = format!("{}_f{}", self.prefix, &key[..16]);
        let readable = signature(&symbol) + &body(f, &params, parallel, true);
        self.distinct.push(Distinct {
            function: CFunction {
                text: signature(&symbol) + &compiled,
                symbol,
                params,
                avx512: f.avx512,
                unit: 0,
            },
            readable,
            key: key.clone(),
            first_step: step,
        });
        self.by_key.insert(key, self.distinct.len() - 1);
        self.distinct.len() - 1
    }
}

/// The first line of a step function.
fn signature(symbol: &str) -> String {
    format!("int32_t {symbol}(void *const *args, int64_t lo, int64_t hi)\n")
}

/// The parameters as the interface text writes them.
pub(super) fn params_text(params: &[Param]) -> String {
    let p: Vec<String> = params.iter().map(Param::to_string).collect();
    p.join(", ")
}

/// Everything of the function after its first line, with or without the
/// comment lines.
fn body(f: &Func, params: &[Param], parallel: bool, comments: bool) -> String {
    let mut s = String::from("{\n");
    // Out-of-bounds gather positions are collected here rather than
    // returned at once, so that loops with gathers stay vectorizable.
    s.push_str("  int32_t tsr_err = 0;\n");
    for (j, p) in params.iter().enumerate() {
        let ty = scalar::storage_type(p.dtype);
        // The C compiler refuses a store through a `const` pointer, so a
        // buffer the step's views do not write is never written.
        let cst = if p.written { "" } else { "const " };
        let _ = writeln!(
            s,
            "  {cst}{ty} *restrict {name} = ({cst}{ty} *)args[{j}];",
            name = arg_name(j)
        );
    }
    if !parallel {
        s.push_str("  (void)lo;\n  (void)hi;\n");
    }
    for line in f.lines.iter().filter(|l| comments || !l.comment) {
        s.push_str(&line.text);
        s.push('\n');
    }
    s.push_str("  return tsr_err ? TSR_ERR_GATHER : 0;\n}\n");
    s
}
