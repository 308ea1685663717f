//! The verifier's work bounds: an exact test that would evaluate more
//! comprehension points than its caller allows (`Options::exact_work`, a
//! search's final proof) is left to the floating-point test, which says
//! why; and an output of many boxes whose points are costly (a convolution
//! by Winograd's algorithm: each point a matrix product's sums over
//! transformed operands) is tested at a random choice of its boxes. Both
//! still tell a wrong program from a right one.

use opt::verify::{verify, Method, Options, Verdict};

/// A 3 x 3 convolution of a channel-blocked image, direct (`direct`), by
/// Winograd's F(2x2, 3x3) (`winograd`), and by it with the wrong dilation
/// (`wrong`); `relu` adds the ReLU epilogue to all three.
fn program(c_blocks: usize, size: usize, relu: bool) -> ir::Program {
    let r = if relu { "_relu" } else { "" };
    let sig = format!(
        "float(1,{c_blocks},{size},{size},16) X, float(1,{c_blocks},3,3,16,16) Wt, float(1,16) B"
    );
    let out = size - 2;
    let text = format!(
        "def direct({sig}) -> (Y) {{
  Y = conv2d_nchwc{r}(X, Wt, B, 1, 1, 0, 0, 0, 0, 1, 1)
}}
def winograd({sig}) -> (Y) {{
  V = winograd_f23_input_nchwc(X, 0, 0, 0, 0, 1, 1)
  U = winograd_f23_filter_nchwc(Wt)
  P = winograd_product(V, U)
  Y = winograd_f23_output_nchwc{r}(P, B, {out}, {out})
}}
def wrong({sig}) -> (Y) {{
  Y = conv2d_nchwc{r}(X, Wt, B, 1, 1, 1, 0, 1, 0, 2, 1)
}}
"
    );
    let prelude = std::fs::read_to_string(testkit::root().join("ops/prelude.tc")).unwrap();
    tc::check_source(&format!("{prelude}\n{text}"))
        .unwrap_or_else(|d| panic!("{d:?}"))
        .program
}

fn check(p: &ir::Program, b: &str, exact_work: Option<u64>) -> opt::verify::Report {
    let options = Options {
        exact_work,
        ..Default::default()
    };
    verify(p, "direct", p, b, &options).unwrap_or_else(|e| panic!("{b}: {e}"))
}

#[test]
fn an_exact_test_past_its_work_is_left_to_floating_point() {
    // A 10 x 10 output: 100 boxes (the output transform's `/` and `%`
    // split every point), more than the floating-point test takes whole.
    let p = program(2, 12, false);
    let exact = check(&p, "winograd", None);
    assert!(
        matches!(exact.method, Method::Exact { .. }),
        "{:?}",
        exact.method
    );
    assert!(exact.equivalent());
    let bounded = check(&p, "winograd", Some(1000));
    let text = opt::verify::print_report(&bounded);
    assert!(bounded.equivalent(), "{text}");
    assert!(
        text.contains("more than 1000 evaluations of comprehension points"),
        "{text}"
    );
    assert!(!matches!(bounded.method, Method::Exact { .. }));
    let wrong = check(&p, "wrong", Some(1000));
    assert!(matches!(wrong.verdict, Verdict::NotEquivalent { .. }));
    // A 4 x 4 output has few boxes: the floating-point test would test
    // each at more points, so the exact test goes on past the bound.
    let few = check(&program(2, 6, false), "winograd", Some(1000));
    assert!(
        matches!(few.method, Method::Exact { .. }),
        "{:?}",
        few.method
    );
}

#[test]
fn costly_points_of_many_boxes_are_tested_at_a_random_choice_of_them() {
    // 784 boxes (the output transform's `/` and `%` split every point),
    // each point some 2.5 x 10^4 evaluations: a few dozen boxes fit.
    let p = program(4, 30, true);
    let report = check(&p, "winograd", None);
    assert!(
        report.equivalent(),
        "{}",
        opt::verify::print_report(&report)
    );
    match report.method {
        Method::Sampled { boxes, tested, .. } => {
            assert_eq!(boxes, 784);
            assert!(
                (12..boxes / 4).contains(&tested),
                "{tested} of {boxes} tested"
            );
        }
        m => panic!("not sampled: {m:?}"),
    }
    let wrong = check(&p, "wrong", None);
    assert!(matches!(wrong.verdict, Verdict::NotEquivalent { .. }));
}
