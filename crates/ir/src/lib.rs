//! tessera's comprehension IR.
//!
//! Every tensor operation is a comprehension (DESIGN.md): output iterators,
//! reduction iterators with a range each, a reduction operator and a scalar
//! body over tensor reads. A [`Def`] is a list of statements (comprehensions,
//! calls of other defs, and loop and branch regions whose results are values); a [`Program`] is a list of defs. The IR is
//! explicitly typed and its shapes and ranges are symbolic ([`SizeExpr`]).
//! [`print_program`] writes TC that the `tc` crate parses back to the same
//! IR; [`verify_program`] checks the invariants listed in `verify.rs`.

pub mod arith;
mod at_sizes;
mod builtin;
mod dtype;
mod expr;
mod interval;
pub mod minifloat;
pub mod opmatch;
mod print;
mod program;
mod size;
mod special;
mod verify;

pub use at_sizes::at_sizes;
pub use builtin::{Builtin, CSpelling};
pub use dtype::DType;
pub use expr::{BinOp, Expr, UnOp, Value};
pub use interval::{Bounds, MayWrap};
pub use print::{
    default_literal_type, is_weak, print_comprehension, print_def, print_expr, print_program,
};
pub use program::{
    int_max, int_min, walk_stmts, CallArg, CallStmt, Carried, Comprehension, Def, IfStmt,
    IterRange, LoopStmt, Param, Program, Reduction, Stmt, TensorDecl, TensorRole, MAX_CALL_DEPTH,
};
pub use size::{floor_div, floor_mod, Atom, EvalError, Monomial, SizeExpr};
pub use verify::verify_program;
