//! The kernel IR's text form: printed blocks read back equal and print the
//! same, malformed texts fail with positioned messages, and no input makes
//! the parser panic.

use ir::{BinOp, Builtin, DType, UnOp, Value};
use kernel::{
    parse_block, print_block, row_major, Affine, Agg, Block, Dim, Index, Op, RefDir, Refinement,
    Statement, StmtKind, Tags,
};
use testkit::Rng;

fn tags(names: &[&str]) -> Tags {
    names.iter().map(|s| s.to_string()).collect()
}

fn idx(name: &str, range: u64) -> Index {
    Index {
        name: name.to_string(),
        range,
        affine: None,
        tags: Tags::new(),
    }
}

fn passed(name: &str, form: Affine) -> Index {
    Index {
        name: name.to_string(),
        range: 1,
        affine: Some(form),
        tags: Tags::new(),
    }
}

fn refine(dir: RefDir, name: &str, access: Vec<Affine>, dtype: DType, sizes: &[u64]) -> Refinement {
    Refinement {
        dir,
        from: Some(name.to_string()),
        into: name.to_string(),
        access,
        dtype,
        shape: row_major(sizes, dtype).unwrap(),
        agg: Agg::Assign,
        location: None,
        tags: Tags::new(),
    }
}

fn stmt(kind: StmtKind) -> Statement {
    Statement {
        kind,
        tags: Tags::new(),
    }
}

fn tagged(kind: StmtKind, t: &[&str]) -> Statement {
    Statement {
        kind,
        tags: tags(t),
    }
}

fn s(x: &str) -> String {
    x.to_string()
}

/// `sum(coef * name) + constant`.
fn form(terms: &[(&str, i64)], constant: i64) -> Affine {
    let mut a = Affine::constant(constant);
    for (n, c) in terms {
        a.add_term(n, *c);
    }
    a
}

fn intrinsic(op: Op, inputs: &[&str], into: &str, dtype: DType) -> StmtKind {
    StmtKind::Intrinsic {
        op,
        inputs: inputs.iter().map(|x| s(x)).collect(),
        into: s(into),
        dtype,
    }
}

fn constant(into: &str, value: Value, dtype: DType) -> StmtKind {
    StmtKind::Constant {
        into: s(into),
        value,
        dtype,
    }
}

/// Asserts that `b` reads back equal and prints the same a second time;
/// returns the text.
fn round_trip(b: &Block) -> String {
    let text = print_block(b);
    let back = match parse_block(&text) {
        Ok(back) => back,
        Err(e) => panic!("{e}\n{text}"),
    };
    assert_eq!(&back, b, "\n{text}");
    assert_eq!(print_block(&back), text);
    text
}

/// The 3×3 convolution of the paper's Figure 5, with a halo constraint.
fn conv() -> Block {
    let mut b = Block::new("conv");
    b.comment = s("O(n, f, x, y) +=! I(n, c, x + i - 1, y + j - 1) * W(f, c, i, j)");
    b.tags = tags(&["main", "contraction"]);
    b.idxs = vec![
        idx("n", 1),
        idx("f", 16),
        idx("x", 12),
        idx("y", 16),
        idx("c", 8),
        idx("i", 3),
        idx("j", 3),
    ];
    b.constraints = vec![
        form(&[("x", 1), ("i", 1)], -1),
        form(&[("x", -1), ("i", -1)], 12),
    ];
    let mut o = refine(
        RefDir::Out,
        "O",
        ["n", "f", "x", "y"].map(Affine::index).to_vec(),
        DType::F32,
        &[1, 1, 1, 1],
    );
    o.agg = Agg::Add;
    o.shape = vec![
        Dim {
            size: 1,
            stride: 3072,
        },
        Dim {
            size: 1,
            stride: 192,
        },
        Dim {
            size: 1,
            stride: 16,
        },
        Dim { size: 1, stride: 1 },
    ];
    o.tags = tags(&["acc"]);
    b.refs = vec![
        refine(
            RefDir::In,
            "I",
            vec![
                Affine::index("n"),
                Affine::index("c"),
                form(&[("x", 1), ("i", 1)], -1),
                form(&[("y", 1), ("j", 1)], -1),
            ],
            DType::F32,
            &[1, 1, 1, 1],
        ),
        refine(
            RefDir::In,
            "W",
            ["f", "c", "i", "j"].map(Affine::index).to_vec(),
            DType::F32,
            &[1, 1, 1, 1],
        ),
        o,
    ];
    b.stmts = vec![
        stmt(StmtKind::Load {
            from: s("I"),
            into: s("I"),
        }),
        stmt(StmtKind::Load {
            from: s("W"),
            into: s("W"),
        }),
        stmt(intrinsic(
            Op::Binary(BinOp::Mul),
            &["I", "W"],
            "p",
            DType::F32,
        )),
        stmt(StmtKind::Store {
            from: s("p"),
            into: s("O"),
        }),
    ];
    b
}

#[test]
fn the_printed_form_reads_as_documented() {
    let text = round_trip(&conv());
    let expected = "\
block conv [n:1, f:16, x:12, y:16, c:8, i:3, j:3] #contraction #main // O(n, f, x, y) +=! I(n, c, x + i - 1, y + j - 1) * W(f, c, i, j)
  i + x - 1 >= 0
  -i - x + 12 >= 0
  in I[n, c, i + x - 1, j + y - 1] float32(1, 1, 1, 1):(1, 1, 1, 1)
  in W[f, c, i, j] float32(1, 1, 1, 1):(1, 1, 1, 1)
  out O[n, f, x, y]:add float32(1, 1, 1, 1):(3072, 192, 16, 1) #acc
{
  $I = load(I)
  $W = load(W)
  $p = mul.float32($I, $W)
  O = store($p)
}
";
    assert_eq!(text, expected);
}

/// A block with every statement kind, every direction and aggregation,
/// local buffers, locations, renamed views, tags everywhere and three
/// levels of nesting.
fn everything() -> Block {
    let mut inner = Block::new("inner");
    inner.tags = tags(&["vector"]);
    inner.idxs = vec![
        passed("x", form(&[("x", 4), ("k", 1)], -1)),
        passed("y", form(&[("y", -3)], 0)),
        Index {
            tags: tags(&["lane", "simd"]),
            ..idx("l", 8)
        },
    ];
    inner.constraints = vec![form(&[("x", -2), ("l", 1)], 7), form(&[("y", 1)], 0)];
    let mut view = refine(
        RefDir::InOut,
        "A",
        vec![Affine::index("l")],
        DType::I32,
        &[8],
    );
    view.into = s("V");
    view.agg = Agg::Max;
    view.location = Some(s("SRAM"));
    view.tags = tags(&["tile"]);
    inner.refs = vec![view];
    inner.stmts = vec![
        tagged(
            StmtKind::Load {
                from: s("V"),
                into: s("v"),
            },
            &["first"],
        ),
        stmt(StmtKind::LoadIndex {
            from: form(&[("x", 2), ("l", -1), ("y", 1)], -5),
            into: s("k"),
        }),
        stmt(StmtKind::LoadIndex {
            from: Affine::constant(0),
            into: s("z"),
        }),
        stmt(StmtKind::Store {
            from: s("v"),
            into: s("V"),
        }),
    ];

    let mut middle = Block::new("middle");
    middle.idxs = vec![
        passed("x", Affine::index("x")),
        idx("k", 4),
        passed("y", Affine::index("y")),
    ];
    let mut local = refine(RefDir::None, "T", Vec::new(), DType::F64, &[4, 2]);
    local.from = None;
    local.location = Some(s("REGS"));
    let mut local_in = refine(RefDir::In, "U", vec![Affine::constant(3)], DType::U8, &[1]);
    local_in.from = None;
    let mut whole = refine(RefDir::InOut, "A", Vec::new(), DType::I32, &[]);
    whole.agg = Agg::Min;
    middle.refs = vec![local, local_in, whole];
    middle.stmts = vec![
        tagged(StmtKind::Block(Box::new(inner)), &["unrolled", "x"]),
        stmt(StmtKind::Gather {
            from: s("T"),
            indices: vec![s("i0"), s("i1")],
            into: s("g"),
        }),
        stmt(StmtKind::Gather {
            from: s("U"),
            indices: Vec::new(),
            into: s("h"),
        }),
    ];

    let mut top = Block::new("main");
    top.comment = s("everything");
    top.idxs = vec![idx("x", 3), idx("y", 2), idx("empty", 0)];
    let mut refs = Vec::new();
    for (k, dir) in [RefDir::None, RefDir::In, RefDir::Out, RefDir::InOut]
        .into_iter()
        .enumerate()
    {
        for (m, agg) in [Agg::Assign, Agg::Add, Agg::Mul, Agg::Min, Agg::Max]
            .into_iter()
            .enumerate()
        {
            let mut r = refine(
                dir,
                &format!("B{k}{m}"),
                vec![Affine::index("x"), Affine::constant(-1)],
                DType::ALL[(k + m) % DType::ALL.len()],
                &[3, 5],
            );
            r.agg = agg;
            r.shape[1].stride = -7;
            refs.push(r);
        }
    }
    for (k, dtype) in DType::ALL.into_iter().enumerate() {
        let mut r = refine(
            RefDir::In,
            &format!("D{k}"),
            vec![Affine::constant(0)],
            dtype,
            &[2],
        );
        r.tags = tags(&["dtype", dtype.name()]);
        refs.push(r);
    }
    top.refs = refs;
    let mut stmts = vec![stmt(StmtKind::Block(Box::new(middle)))];
    let values = [
        (Value::Float(0.1), DType::F64),
        (Value::Float(-0.0), DType::F32),
        (Value::Float(1e-30), DType::F64),
        (Value::Float(1e300), DType::F64),
        (Value::Float(f64::INFINITY), DType::F64),
        (Value::Float(f64::NEG_INFINITY), DType::F32),
        (Value::Float(3.0), DType::F32),
        (Value::Int(i64::MIN), DType::I64),
        (Value::Int(i64::MAX), DType::U64),
        (Value::Int(0), DType::U8),
        (Value::Int(-1), DType::I8),
        (Value::Bool(true), DType::Bool),
        (Value::Bool(false), DType::Bool),
    ];
    for (k, (value, dtype)) in values.into_iter().enumerate() {
        stmts.push(stmt(constant(&format!("c{k}"), value, dtype)));
    }
    for dtype in DType::ALL {
        stmts.push(stmt(intrinsic(Op::Cast, &["c0"], dtype.name(), dtype)));
    }
    for (op, _) in BIN_OPS {
        stmts.push(stmt(intrinsic(
            Op::Binary(op),
            &["a", "b"],
            "r",
            DType::I32,
        )));
    }
    for op in [UnOp::Neg, UnOp::Not] {
        stmts.push(tagged(
            intrinsic(Op::Unary(op), &["a"], "r", DType::Bool),
            &["unary"],
        ));
    }
    for b in Builtin::ALL {
        // norm4d and rnorm4d take four operands.
        let inputs = ["a", "b", "c", "a"];
        stmts.push(stmt(intrinsic(
            Op::Builtin(b),
            &inputs[..b.arity()],
            "r",
            DType::F32,
        )));
    }
    stmts.push(stmt(intrinsic(
        Op::Select,
        &["c", "a", "b"],
        "r",
        DType::F64,
    )));
    stmts.push(stmt(intrinsic(
        Op::Binary(BinOp::Add),
        &[],
        "nothing",
        DType::I64,
    )));
    top.stmts = stmts;
    top
}

const BIN_OPS: [(BinOp, &str); 13] = [
    (BinOp::Add, "add"),
    (BinOp::Sub, "sub"),
    (BinOp::Mul, "mul"),
    (BinOp::Div, "div"),
    (BinOp::Mod, "mod"),
    (BinOp::Lt, "lt"),
    (BinOp::Le, "le"),
    (BinOp::Gt, "gt"),
    (BinOp::Ge, "ge"),
    (BinOp::Eq, "eq"),
    (BinOp::Ne, "ne"),
    (BinOp::And, "and"),
    (BinOp::Or, "or"),
];

#[test]
fn every_construct_round_trips() {
    let text = round_trip(&everything());
    for line in [
        "    block inner [x:1 = k + 4*x - 1, y:1 = -3*y, l:8 #lane #simd] #vector",
        "      l - 2*x + 7 >= 0",
        "      inout V = A[l]:max int32(8):(1) @SRAM #tile",
        "      $v = load(V) #first",
        "      $k = index(-l + 2*x + y - 5)",
        "    } #unrolled #x",
        "    none new T float64(4, 2):(2, 1) @REGS",
        "    in new U[3] uint8(1):(1)",
        "    inout A[]:min int32():()",
        "    $g = gather(T, $i0, $i1)",
        "    $h = gather(U)",
        "  none B00[x, -1] bool(3, 5):(5, -7)",
        "  inout B34[x, -1]:max uint16(3, 5):(5, -7)",
        "  $c1 = const.float32(-0.0)",
        "  $c2 = const.float64(1e-30)",
        "  $c4 = const.float64(inf)",
        "  $c7 = const.int64(-9223372036854775808)",
        "  $c11 = const.bool(true)",
        "  $r = fabs.float32($a)",
        "  $r = fma.float32($a, $b, $c)",
        "  $r = neg.bool($a) #unary",
        "  $r = select.float64($c, $a, $b)",
        "  $nothing = add.int64()",
        "  $uint16 = cast.uint16($c0)",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "no line {line:?} in\n{text}"
        );
    }
    for (_, name) in BIN_OPS {
        assert!(
            text.contains(&format!("$r = {name}.int32($a, $b)")),
            "{name}"
        );
    }
}

#[test]
fn names_that_are_not_identifiers_are_quoted() {
    let mut b = Block::new("");
    b.comment = s(" two\nlines \\ with \"quotes\"\r and a tab\t ");
    b.tags = tags(&["a b", "ünï", "#", "in"]);
    b.idxs = vec![
        idx("block", 2),
        idx("x.y", 3),
        passed("new", form(&[("in", -1)], 0)),
    ];
    b.constraints = vec![form(&[("none", 1), ("x.y", -1)], 0)];
    let mut r = refine(
        RefDir::InOut,
        "out",
        vec![Affine::index("\"q\"")],
        DType::F32,
        &[2],
    );
    r.into = s("a\u{0}b");
    r.location = Some(s("mem 0"));
    b.refs = vec![r];
    b.stmts = vec![
        stmt(StmtKind::Store {
            from: s(""),
            into: s("inout"),
        }),
        stmt(StmtKind::Load {
            from: s("a\u{0}b"),
            into: s("\\"),
        }),
    ];
    let text = round_trip(&b);
    assert!(text.starts_with(
        "block \"\" [\"block\":2, \"x.y\":3, \"new\":1 = -\"in\"] #\"#\" #\"a b\" #\"in\" #\"ünï\" \
         //  two\\u{a}lines \\\\ with \"quotes\"\\u{d} and a tab\\u{9} \n"
    ));
    assert!(
        text.contains("  inout \"a\\u{0}b\" = \"out\"[\"\\\"q\\\"\"] float32(2):(1) @\"mem 0\"\n")
    );
}

#[test]
fn extreme_affine_forms_round_trip() {
    let mut b = Block::new("extremes");
    b.idxs = vec![idx("x", u64::MAX), idx("y", 0)];
    b.constraints = vec![
        form(&[("x", i64::MIN)], i64::MIN),
        form(&[("x", i64::MAX), ("y", i64::MIN)], i64::MAX),
        form(&[("x", -1)], -1),
        Affine::constant(i64::MIN),
        Affine::constant(0),
    ];
    let mut r = refine(RefDir::In, "I", vec![form(&[("y", 1)], 1)], DType::F32, &[]);
    r.shape = vec![
        Dim {
            size: u64::MAX,
            stride: i64::MIN,
        },
        Dim {
            size: 0,
            stride: i64::MAX,
        },
    ];
    b.refs = vec![r];
    let text = round_trip(&b);
    assert!(text.contains("  -9223372036854775808*x - 9223372036854775808 >= 0\n"));
    assert!(text.contains("(18446744073709551615, 0):(-9223372036854775808, 9223372036854775807)"));
}

fn nest(depth: usize) -> Block {
    let mut b = Block::new(&format!("b{depth}"));
    if depth > 1 {
        b.stmts
            .push(stmt(StmtKind::Block(Box::new(nest(depth - 1)))));
    }
    b
}

#[test]
fn nesting_is_bounded_at_64_blocks() {
    round_trip(&nest(64));
    let e = parse_block(&print_block(&nest(65))).unwrap_err();
    assert_eq!((e.line, e.col), (129, 129));
    assert!(e.message.contains("deeper than 64"), "{e}");
}

#[test]
fn nan_prints_stably() {
    let mut b = Block::new("nan");
    b.stmts = vec![stmt(constant("n", Value::Float(f64::NAN), DType::F32))];
    let text = print_block(&b);
    assert!(text.contains("$n = const.float32(NaN)"), "{text}");
    let back = parse_block(&text).unwrap();
    assert_eq!(print_block(&back), text);
}

#[test]
fn the_reader_is_lenient_about_layout_and_aliases() {
    let text = "\r\n\
        \tblock   conv[n :1,x: 12]#main//c\r\n\
        \n\
        in I [ n , x-1 ] : assign float( 1 , 1 ) : ( 12 , 1 )\n\
        out O[x + x]:add double(1):(1)\n\
        x-1*n>=0\n\
        {\n\
        $a=load(I)\n\
        $b = expf.float($a)\n\
        $m = max.int($a, $b)\n\
        O=store( $b )#t #t\n\
        }\n\n";
    let b = parse_block(text).unwrap();
    assert_eq!(b.comment, "c");
    assert_eq!(b.constraints, vec![form(&[("x", 1), ("n", -1)], 0)]);
    assert_eq!(b.refs[0].access[1], form(&[("x", 1)], -1));
    assert_eq!(b.refs[0].agg, Agg::Assign);
    assert_eq!(b.refs[1].access[0], form(&[("x", 2)], 0));
    assert_eq!(b.refs[1].dtype, DType::F64);
    assert_eq!(
        b.stmts[1].kind,
        intrinsic(Op::Builtin(Builtin::Exp), &["a"], "b", DType::F32)
    );
    assert_eq!(
        b.stmts[2].kind,
        intrinsic(Op::Builtin(Builtin::Max), &["a", "b"], "m", DType::I32)
    );
    assert_eq!(b.stmts[3].tags, tags(&["t"]));
    round_trip(&b);
}

#[test]
fn malformed_texts_fail_where_and_why() {
    let cases: &[(&str, usize, usize, &str)] = &[
        ("", 1, 1, "expected `block`, found end of input"),
        ("  \n\n", 3, 1, "expected `block`, found end of input"),
        ("blok b []\n{\n}\n", 1, 1, "expected `block`, found `blok`"),
        (
            "block [] \n{\n}\n",
            1,
            7,
            "expected a block name, found `[`",
        ),
        (
            "block b [x]\n{\n}\n",
            1,
            11,
            "expected `:` and the index's range, found `]`",
        ),
        (
            "block b [x:-1]\n{\n}\n",
            1,
            12,
            "expected a range, found `-`",
        ),
        (
            "block b [x:99999999999999999999]\n{\n}\n",
            1,
            12,
            "`99999999999999999999` is out of range for a range",
        ),
        (
            "block b [x:1 y:2]\n{\n}\n",
            1,
            14,
            "expected `,` or `]`, found `y`",
        ),
        (
            "block b [] extra\n{\n}\n",
            1,
            12,
            "expected a tag, a `//` comment or end of line, found `extra`",
        ),
        (
            "block b []\n",
            2,
            1,
            "expected `{` opening the statements, found end of input",
        ),
        (
            "block b []\n  x + 1\n{\n}\n",
            2,
            8,
            "expected `>= 0` ending the constraint, found end of line",
        ),
        (
            "block b []\n  x >= 1\n{\n}\n",
            2,
            8,
            "expected `0` after `>=`, found `1`",
        ),
        (
            "block b []\n  2*3 >= 0\n{\n}\n",
            2,
            5,
            "expected an index name after `*`, found `3`",
        ),
        (
            "block b []\n  9223372036854775808 >= 0\n{\n}\n",
            2,
            3,
            "`9223372036854775808` is out of range for an integer",
        ),
        (
            "block b []\n  ? >= 0\n{\n}\n",
            2,
            3,
            "expected a constraint, a refinement (`in`, `out`, `inout`, `none`) or `{`, found `?`",
        ),
        (
            "block b []\n  in I[0] float33(1):(1)\n{\n}\n",
            2,
            11,
            "unknown type `float33`",
        ),
        (
            "block b []\n  in I[0]:sum float32(1):(1)\n{\n}\n",
            2,
            11,
            "unknown aggregation `sum`",
        ),
        (
            "block b []\n  in I[0] float32(1, 2):(1)\n{\n}\n",
            2,
            26,
            "1 strides for 2 sizes",
        ),
        (
            "block b []\n  in I float32(1):(1)\n{\n}\n",
            2,
            8,
            "expected `[` opening the access, found `float32`",
        ),
        (
            "block b []\n  out O[0] float32(1):(1) @\n{\n}\n",
            2,
            28,
            "expected a location name after `@`, found end of line",
        ),
        (
            "block b []\n{\n  $x = frob.float32($a)\n}\n",
            3,
            8,
            "unknown operation `frob`",
        ),
        (
            "block b []\n{\n  $x = add($a)\n}\n",
            3,
            11,
            "expected `.` and a type after `add`, found `(`",
        ),
        (
            "block b []\n{\n  $x = add.float32($a $b)\n}\n",
            3,
            23,
            "expected `,` or `)`, found `$`",
        ),
        (
            "block b []\n{\n  $x = const.int8(1.2.3)\n}\n",
            3,
            19,
            "invalid literal `1.2.3`",
        ),
        (
            "block b []\n{\n  $x = load(I\n}\n",
            3,
            14,
            "expected `)`, found end of line",
        ),
        (
            "block b []\n{\n  O = load($x)\n}\n",
            3,
            7,
            "expected `store` (or `$` before a scalar's name), found `load`",
        ),
        (
            "block b []\n{\n  O = store(x)\n}\n",
            3,
            13,
            "expected a scalar (`$name`), found `x`",
        ),
        (
            "block b []\n{\n  $\"x = load(I)\n}\n",
            3,
            4,
            "unterminated quoted name",
        ),
        ("block b [] #\"\\q\"\n{\n}\n", 1, 14, "invalid escape"),
        ("block b [] // \\u{d800}\n{\n}\n", 1, 15, "invalid escape"),
        (
            "block b []\n{\n  * = 1\n}\n",
            3,
            3,
            "expected a statement or `}`, found `*`",
        ),
        (
            "block b []\n{\n  $x = load(I)\n",
            4,
            1,
            "expected a statement or `}`, found end of input",
        ),
        (
            "block b []\n{\n} #t\n",
            3,
            3,
            "expected end of line after the outermost `}` (it takes no tags), found `#`",
        ),
        (
            "block b []\n{\n}\nblock c []\n",
            4,
            1,
            "expected end of input after the block's `}`, found `block`",
        ),
        (
            "block b []\n{\n  block c []\n  {\n  } x\n}\n",
            5,
            5,
            "expected a tag or end of line after `}`, found `x`",
        ),
        (
            "block b []\n{ x\n}\n",
            2,
            3,
            "expected end of line after `{`, found `x`",
        ),
    ];
    let mut wrong = Vec::new();
    for (text, line, col, message) in cases {
        match parse_block(text) {
            Ok(b) => wrong.push(format!("{text:?} parsed as {b:?}")),
            Err(e) if !e.message.contains(message) || (e.line, e.col) != (*line, *col) => {
                wrong.push(format!("{text:?}: got {e}, want {line}:{col}: {message}"));
            }
            Err(e) => assert_eq!(
                e.to_string(),
                format!("{}:{}: {}", e.line, e.col, e.message)
            ),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn mutated_texts_never_panic() {
    let original = print_block(&everything()).into_bytes();
    let specials = b"{}[]()<>=:,.#@$\"\\/-+*0123456789 \n\te";
    let mut rng = Rng::new(0x5eed);
    let mut parsed = 0;
    for _ in 0..3000 {
        let mut bytes = original.clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bytes.len());
            match rng.below(4) {
                0 => {
                    bytes.remove(at);
                }
                1 => bytes.insert(at, specials[rng.below(specials.len())]),
                2 => bytes.insert(at, rng.next_u64() as u8),
                _ => bytes[at] ^= 1 << rng.below(8),
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(b) = parse_block(&text) {
            parsed += 1;
            let again = print_block(&b);
            let back = parse_block(&again).unwrap_or_else(|e| panic!("{e}\n{again}"));
            assert_eq!(print_block(&back), again);
        }
    }
    assert!(parsed > 0 && parsed < 3000, "{parsed} mutants parsed");
}

/// Builds random blocks from `rng`: names from a pool with awkward
/// spellings, extreme integers, floats from random bits, up to `depth`
/// levels of nesting.
struct Gen(Rng);

impl Gen {
    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.0.below(items.len())].clone()
    }

    fn name(&mut self) -> String {
        s(self.pick(&[
            "x", "y", "_0", "in", "new", "block", "", "a b", "q\"", "\\", "é", "\t", "#t", "//",
        ]))
    }

    fn int(&mut self) -> i64 {
        let raw = self.0.next_u64() as i64;
        self.pick(&[0, 1, -1, 2, -3, i64::MIN, i64::MAX, raw, raw >> 40])
    }

    fn tags(&mut self) -> Tags {
        (0..self.0.below(3)).map(|_| self.name()).collect()
    }

    fn affine(&mut self) -> Affine {
        let mut a = Affine::constant(self.int());
        for _ in 0..self.0.below(3) {
            let (n, c) = (self.name(), self.int());
            a.add_term(&n, c);
        }
        a
    }

    fn value(&mut self) -> Value {
        match self.0.below(3) {
            0 => Value::Int(self.int()),
            1 => Value::Bool(self.0.below(2) == 0),
            _ => {
                let f = f64::from_bits(self.0.next_u64());
                Value::Float(if f.is_nan() { 0.5 } else { f })
            }
        }
    }

    fn names(&mut self) -> Vec<String> {
        (0..self.0.below(4)).map(|_| self.name()).collect()
    }

    fn block(&mut self, depth: usize) -> Block {
        let mut b = Block::new(&self.name());
        b.comment = self.pick(&[s(""), s(" a\nb\\c "), s("// x"), s("\u{7f}")]);
        b.tags = self.tags();
        for _ in 0..self.0.below(4) {
            let affine = (self.0.below(2) == 0).then(|| self.affine());
            b.idxs.push(Index {
                name: self.name(),
                range: self.0.next_u64() >> self.0.below(64),
                affine,
                tags: self.tags(),
            });
        }
        b.constraints = (0..self.0.below(3)).map(|_| self.affine()).collect();
        for _ in 0..self.0.below(4) {
            let into = self.name();
            let other = self.name();
            let from = self.pick(&[None, Some(into.clone()), Some(other)]);
            let shape = (0..self.0.below(3))
                .map(|_| Dim {
                    size: self.0.next_u64() >> self.0.below(64),
                    stride: self.int(),
                })
                .collect();
            b.refs.push(Refinement {
                dir: self.pick(&[RefDir::None, RefDir::In, RefDir::Out, RefDir::InOut]),
                from,
                into,
                access: (0..self.0.below(3)).map(|_| self.affine()).collect(),
                dtype: self.pick(&DType::ALL),
                shape,
                agg: self.pick(&[Agg::Assign, Agg::Add, Agg::Mul, Agg::Min, Agg::Max]),
                location: (self.0.below(2) == 0).then(|| self.name()),
                tags: self.tags(),
            });
        }
        for _ in 0..self.0.below(8) {
            let into = self.name();
            let kind = match self.0.below(8) {
                0 => StmtKind::Load {
                    from: self.name(),
                    into,
                },
                1 => StmtKind::Store {
                    from: self.name(),
                    into,
                },
                2 => StmtKind::LoadIndex {
                    from: self.affine(),
                    into,
                },
                3 => StmtKind::Constant {
                    into,
                    value: self.value(),
                    dtype: self.pick(&DType::ALL),
                },
                4 => StmtKind::Gather {
                    from: self.name(),
                    indices: self.names(),
                    into,
                },
                5 if depth > 0 => StmtKind::Block(Box::new(self.block(depth - 1))),
                _ => {
                    let op = match self.0.below(5) {
                        0 => Op::Unary(self.pick(&[UnOp::Neg, UnOp::Not])),
                        1 => Op::Binary(self.pick(&BIN_OPS).0),
                        2 => Op::Builtin(self.pick(&Builtin::ALL)),
                        3 => Op::Select,
                        _ => Op::Cast,
                    };
                    StmtKind::Intrinsic {
                        op,
                        inputs: self.names(),
                        into,
                        dtype: self.pick(&DType::ALL),
                    }
                }
            };
            let tags = self.tags();
            b.stmts.push(Statement { kind, tags });
        }
        b
    }
}

#[test]
fn random_blocks_round_trip() {
    let mut g = Gen(Rng::new(7));
    for _ in 0..500 {
        round_trip(&g.block(3));
    }
}
