//! The built-in scalar functions: Tensor Comprehensions' 64 (the CUDA math
//! functions TC's `lang/builtins.h` lists, with their arities) and
//! tessera's extras (`sigmoid`, `max`, `min`, and `abs` as an alias).
//!
//! This file is the one table of them: each function's canonical name,
//! arity, whether it is defined on integers, and how the C backend spells
//! it. What each computes is `arith::builtin` (float functions in `f64`,
//! rounded once to the result type); the table is what every other crate
//! (the TC checker, the kernel text format and verifier, the C emitter)
//! reads, so adding a function here is adding it everywhere.

/// How the C backend computes a float builtin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CSpelling {
    /// A C function of this name on `double`, whose `float` version is the
    /// name with `f` appended (`exp`, `expf`); called in the operand type.
    /// Names starting with `tsr_` are the C prelude's helpers.
    Typed(&'static str),
    /// A C function on `double`, called in `double` for either float type
    /// (the operands converted to `double`, the result back), which is
    /// `arith`'s definition: computed in `f64`, rounded once.
    Double(&'static str),
}

/// One row of the table.
struct Info {
    name: &'static str,
    arity: usize,
    ints: bool,
    c: CSpelling,
}

macro_rules! builtins {
    ($($variant:ident $name:literal $arity:literal $ints:literal $c:expr;)*) => {
        /// Built-in scalar functions.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Builtin {
            $($variant),*
        }

        impl Builtin {
            /// Every builtin, in the table's order.
            pub const ALL: [Builtin; [$($name),*].len()] = [$(Builtin::$variant),*];

            fn info(self) -> Info {
                match self {
                    $(Builtin::$variant => Info {
                        name: $name,
                        arity: $arity,
                        ints: $ints,
                        c: $c,
                    }),*
                }
            }
        }
    };
}

use CSpelling::{Double, Typed};

builtins! {
    // The functions tessera had before TC's full list, computed in C in
    // the operand type (within the documented ulps of arith's).
    Exp "exp" 1 false Typed("exp");
    Log "log" 1 false Typed("log");
    Tanh "tanh" 1 false Typed("tanh");
    Sqrt "sqrt" 1 false Typed("sqrt");
    Rsqrt "rsqrt" 1 false Typed("tsr_rsqrt");
    Abs "fabs" 1 true Typed("fabs");
    Fmax "fmax" 2 true Typed("tsr_fmax");
    Fmin "fmin" 2 true Typed("tsr_fmin");
    Fma "fma" 3 false Typed("fma");
    Pow "pow" 2 false Typed("pow");
    Erf "erf" 1 false Typed("erf");
    Sin "sin" 1 false Typed("sin");
    Cos "cos" 1 false Typed("cos");
    Floor "floor" 1 false Typed("floor");
    Ceil "ceil" 1 false Typed("ceil");
    Sigmoid "sigmoid" 1 false Typed("tsr_sigmoid");
    // TC's `max` and `min`: IEEE 754-2019 `maximum` and `minimum` on
    // floats (a NaN operand gives NaN), unlike C's `fmax` and `fmin`.
    Max "max" 2 true Typed("tsr_maximum");
    Min "min" 2 true Typed("tsr_minimum");
    // The rest of TC's list, computed in C in `double` as arith does.
    Acos "acos" 1 false Double("acos");
    Acosh "acosh" 1 false Double("acosh");
    Asin "asin" 1 false Double("asin");
    Asinh "asinh" 1 false Double("asinh");
    Atan2 "atan2" 2 false Double("atan2");
    Atan "atan" 1 false Double("atan");
    Atanh "atanh" 1 false Double("atanh");
    Cbrt "cbrt" 1 false Double("cbrt");
    Copysign "copysign" 2 false Double("copysign");
    Cosh "cosh" 1 false Double("cosh");
    Cospi "cospi" 1 false Double("tsr_cospi");
    CylBesselI0 "cyl_bessel_i0" 1 false Double("tsr_bessel_i0");
    CylBesselI1 "cyl_bessel_i1" 1 false Double("tsr_bessel_i1");
    Erfc "erfc" 1 false Double("erfc");
    Erfcinv "erfcinv" 1 false Double("tsr_erfcinv");
    Erfcx "erfcx" 1 false Double("tsr_erfcx");
    Erfinv "erfinv" 1 false Double("tsr_erfinv");
    Exp10 "exp10" 1 false Double("tsr_exp10");
    Exp2 "exp2" 1 false Double("exp2");
    Expm1 "expm1" 1 false Double("expm1");
    Fdim "fdim" 2 false Double("fdim");
    Fdivide "fdivide" 2 false Double("tsr_fdivide");
    Fmod "fmod" 2 false Double("fmod");
    Hypot "hypot" 2 false Double("hypot");
    J0 "j0" 1 false Double("j0");
    J1 "j1" 1 false Double("j1");
    Lgamma "lgamma" 1 false Double("tsr_lgamma");
    Log10 "log10" 1 false Double("log10");
    Log1p "log1p" 1 false Double("log1p");
    Log2 "log2" 1 false Double("log2");
    Logb "logb" 1 false Double("logb");
    // The next float after x toward y is a property of the operand type,
    // so it is computed in that type (exact in both).
    Nextafter "nextafter" 2 false Typed("nextafter");
    Norm3d "norm3d" 3 false Double("tsr_norm3d");
    Norm4d "norm4d" 4 false Double("tsr_norm4d");
    Normcdf "normcdf" 1 false Double("tsr_normcdf");
    Normcdfinv "normcdfinv" 1 false Double("tsr_normcdfinv");
    Rcbrt "rcbrt" 1 false Double("tsr_rcbrt");
    Remainder "remainder" 2 false Double("remainder");
    Rhypot "rhypot" 2 false Double("tsr_rhypot");
    Rnorm3d "rnorm3d" 3 false Double("tsr_rnorm3d");
    Rnorm4d "rnorm4d" 4 false Double("tsr_rnorm4d");
    Round "round" 1 false Double("round");
    Sinh "sinh" 1 false Double("sinh");
    Sinpi "sinpi" 1 false Double("tsr_sinpi");
    Tan "tan" 1 false Double("tan");
    Tgamma "tgamma" 1 false Double("tgamma");
    Trunc "trunc" 1 false Double("trunc");
    Y0 "y0" 1 false Double("y0");
    Y1 "y1" 1 false Double("y1");
}

impl Builtin {
    /// The canonical spelling the printer uses.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Resolves a spelling: canonical names, the CUDA `f`-suffixed aliases
    /// (`expf`, `fmaxf`, ...), and `abs`.
    pub fn from_name(s: &str) -> Option<Builtin> {
        if s == "abs" {
            return Some(Builtin::Abs);
        }
        let found = |n: &str| Builtin::ALL.into_iter().find(|b| b.name() == n);
        // CUDA has no `maxf` or `minf` (its float maximum is `fmaxf`), so
        // those stay names a program may use.
        found(s).or_else(|| {
            s.strip_suffix('f')
                .and_then(found)
                .filter(|b| !matches!(b, Builtin::Max | Builtin::Min))
        })
    }

    pub fn arity(self) -> usize {
        self.info().arity
    }

    /// Whether the function is defined on integers too (otherwise floats only).
    pub fn accepts_int(self) -> bool {
        self.info().ints
    }

    /// How the C backend computes the function on floats.
    pub fn c_spelling(self) -> CSpelling {
        self.info().c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TC's `lang/builtins.h`: name and number of inputs of each of its 64
    /// functions, written out here to check the table against.
    const TC: [(&str, usize); 64] = [
        ("acos", 1),
        ("acosh", 1),
        ("asin", 1),
        ("asinh", 1),
        ("atan2", 2),
        ("atan", 1),
        ("atanh", 1),
        ("cbrt", 1),
        ("ceil", 1),
        ("copysign", 2),
        ("cos", 1),
        ("cosh", 1),
        ("cospi", 1),
        ("cyl_bessel_i0", 1),
        ("cyl_bessel_i1", 1),
        ("erfc", 1),
        ("erfcinv", 1),
        ("erfcx", 1),
        ("erf", 1),
        ("erfinv", 1),
        ("exp10", 1),
        ("exp2", 1),
        ("exp", 1),
        ("expm1", 1),
        ("fabs", 1),
        ("fdim", 2),
        ("fdivide", 2),
        ("floor", 1),
        ("fma", 3),
        ("fmax", 2),
        ("fmin", 2),
        ("fmod", 2),
        ("hypot", 2),
        ("j0", 1),
        ("j1", 1),
        ("lgamma", 1),
        ("log10", 1),
        ("log1p", 1),
        ("log2", 1),
        ("logb", 1),
        ("log", 1),
        ("nextafter", 2),
        ("norm3d", 3),
        ("norm4d", 4),
        ("normcdf", 1),
        ("normcdfinv", 1),
        ("pow", 2),
        ("rcbrt", 1),
        ("remainder", 2),
        ("rhypot", 2),
        ("rnorm3d", 3),
        ("rnorm4d", 4),
        ("round", 1),
        ("rsqrt", 1),
        ("sin", 1),
        ("sinh", 1),
        ("sinpi", 1),
        ("sqrt", 1),
        ("tan", 1),
        ("tanh", 1),
        ("tgamma", 1),
        ("trunc", 1),
        ("y0", 1),
        ("y1", 1),
    ];

    #[test]
    fn every_tc_builtin_is_known_with_its_arity() {
        for (name, arity) in TC {
            let b = Builtin::from_name(name).unwrap_or_else(|| panic!("`{name}` is unknown"));
            assert_eq!(b.name(), name);
            assert_eq!(b.arity(), arity, "{name}");
            let f = format!("{name}f");
            assert_eq!(Builtin::from_name(&f), Some(b), "{f}");
        }
        // The extras beyond TC's list: sigmoid, and max and min, which are
        // not fmax and fmin (abs is a spelling of fabs).
        let extra: Vec<&str> = Builtin::ALL
            .iter()
            .map(|b| b.name())
            .filter(|n| !TC.iter().any(|(m, _)| m == n))
            .collect();
        assert_eq!(extra, ["sigmoid", "max", "min"]);
        assert_eq!(Builtin::from_name("abs"), Some(Builtin::Abs));
        assert_eq!(Builtin::from_name("max"), Some(Builtin::Max));
        assert_eq!(Builtin::from_name("fmaxf"), Some(Builtin::Fmax));
        assert_eq!(Builtin::from_name("minf"), None);
        assert_eq!(Builtin::from_name("erff"), Some(Builtin::Erf));
        assert_eq!(Builtin::from_name("erfcf"), Some(Builtin::Erfc));
        assert_eq!(Builtin::from_name("nope"), None);
    }
}
