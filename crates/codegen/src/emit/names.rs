//! C identifiers for the names of a kernel: indices, views, scalars and
//! buffers become C variables of one step function.
//!
//! Kernel names are free text and repeat between nested blocks (a child's
//! index `i` is not its parent's `i`), while C needs distinct identifiers
//! in one function wherever a child's declaration could capture a parent's
//! name (`for (int64_t i = 0; i < i + 1; ...)` would read the new `i`).
//! [`Names`] therefore hands out identifiers that are unique in the
//! function: the kernel name when it is a safe C identifier, otherwise a
//! sanitized form, with `_2`, `_3`, ... appended on repeats.
//!
//! Guarantees: every identifier returned is a valid C identifier, is no C
//! keyword, does not start with `_` or `tsr_` (the prefix of the generated
//! helpers and of the names the emitter makes up: arguments, local
//! arrays), and cannot be one of the identifiers or object-like macros the
//! generated code uses from `<math.h>`, `<stdint.h>` and `<stdbool.h>`.

use std::collections::HashSet;
use std::sync::OnceLock;

/// C keywords (C11), the macros and the step's parameters the generated
/// code spells out; the math functions it calls are the builtins' C
/// spellings ([`is_builtin_function`]).
const RESERVED: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "bool",
    "true",
    "false",
    "NAN",
    "INFINITY",
    "math_errhandling",
    "args",
    "lo",
    "hi",
];

/// The identifiers of one C function.
#[derive(Debug, Default)]
pub(crate) struct Names {
    used: HashSet<String>,
}

impl Names {
    /// A fresh identifier that reads like `want`.
    pub(crate) fn fresh(&mut self, want: &str) -> String {
        let base = sanitize(want);
        if self.used.insert(base.clone()) {
            return base;
        }
        let mut k = 2usize;
        loop {
            let candidate = format!("{base}_{k}");
            if self.used.insert(candidate.clone()) {
                return candidate;
            }
            k += 1;
        }
    }

    /// Marks identifiers the function declares itself (its parameters).
    pub(crate) fn reserve(&mut self, name: &str) {
        self.used.insert(name.to_string());
    }
}

/// `want` as a safe C identifier (see the module doc).
fn sanitize(want: &str) -> String {
    let mut s: String = want
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, 'v');
    }
    if s.starts_with('_') || s.starts_with("tsr_") {
        s.insert(0, 'v');
    }
    if RESERVED.contains(&s.as_str()) || is_builtin_function(&s) || looks_like_library_name(&s) {
        s.push('_');
    }
    s
}

/// Whether `s` is a C function a builtin is spelled with (`ir::Builtin`'s
/// table: the `double` name, and the `float` one for those called in the
/// operand type).
fn is_builtin_function(s: &str) -> bool {
    // A set made once: every identifier of every step is checked, and a
    // scan of the table per name was a tenth of emitting a large program.
    static NAMES: OnceLock<HashSet<String>> = OnceLock::new();
    NAMES
        .get_or_init(|| {
            let mut names = HashSet::new();
            for b in ir::Builtin::ALL {
                match b.c_spelling() {
                    ir::CSpelling::Typed(n) => {
                        names.insert(n.to_string());
                        names.insert(format!("{n}f"));
                    }
                    ir::CSpelling::Double(n) => {
                        names.insert(n.to_string());
                    }
                }
            }
            names
        })
        .contains(s)
}

/// Names of the shapes the C headers use for their types and macros:
/// `*_t` types, and upper-case names with an underscore (`INT64_MAX`,
/// `FP_NAN`, `HUGE_VALF`). Appending `_` leaves every such shape.
fn looks_like_library_name(s: &str) -> bool {
    s.ends_with("_t")
        || (s.contains('_')
            && s.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_safe_and_unique() {
        let mut n = Names::default();
        n.reserve("lo");
        assert_eq!(n.fresh("i"), "i");
        assert_eq!(n.fresh("i"), "i_2");
        assert_eq!(n.fresh("i"), "i_3");
        assert_eq!(n.fresh("lo"), "lo_");
        assert_eq!(n.fresh("float"), "float_");
        assert_eq!(n.fresh("exp"), "exp_");
        assert_eq!(n.fresh("expf"), "expf_");
        assert_eq!(n.fresh("j0"), "j0_");
        assert_eq!(n.fresh("nextafterf"), "nextafterf_");
        assert_eq!(n.fresh("INT64_MAX"), "INT64_MAX_");
        assert_eq!(n.fresh("size_t"), "size_t_");
        assert_eq!(n.fresh("2LUT"), "v2LUT");
        assert_eq!(n.fresh("_x"), "v_x");
        assert_eq!(n.fresh("tsr_max"), "vtsr_max");
        assert_eq!(n.fresh("a b\"c"), "a_b_c");
        assert_eq!(n.fresh(""), "v");
        assert_eq!(n.fresh("C"), "C");
    }
}
