//! The rewrite rules (`ops/rewrites.rules`) proved, not trusted: every
//! rule, at each of its sample sizes, is written as two TC defs (its left
//! side and its right side over the prelude's operators), and the
//! equivalence verifier must call them equivalent (exactly over Z_p where
//! they are multi-linear, else in floating point); a rule that fails is a
//! test failure naming it, its sizes and the verdict. And a rules file
//! with a mistake is refused with an error naming the rule, the line and
//! the column.

use opt::rules::{self, instance};

/// The prelude's text: the rules' defs are checked after it.
fn prelude_text() -> String {
    std::fs::read_to_string(testkit::root().join("ops/prelude.tc")).unwrap()
}

#[test]
fn every_rule_is_proved_at_its_sample_sizes() {
    let program = testkit::prelude();
    let loaded = rules::load(rules::REWRITES, "ops/rewrites.rules", program)
        .unwrap_or_else(|e| panic!("{e}"));
    let prelude = prelude_text();
    let mut failures = Vec::new();
    for rule in &loaded {
        for sizes in instance::samples(rule, rules::SAMPLES) {
            if let Err(e) = rules::prove::prove(rule, &sizes, &prelude) {
                failures.push(format!("rule `{}` at {sizes:?}: {e}", rule.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A rules file with one mistake is refused with `want` in its error.
fn refused(text: &str, want: &str) {
    match rules::load(text, "bad.rules", testkit::prelude()) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => assert!(e.contains(want), "error `{e}` lacks `{want}`"),
    }
}

#[test]
fn mistaken_rules_are_refused_where_they_are() {
    refused(
        "rule r\n  a: [M, K]\n  (matmull a a) => a\n",
        "bad.rules:3:3: rule `r`: unknown operator `matmull`",
    );
    refused(
        "rule r\n  a: [M, K], b: [K, N]\n  (matmul a b) => (matmul_tb a b)\n",
        "bad.rules:3:19: rule `r`: at K=3, M=4, N=5: argument 2 of `matmul_tb` (`B`) makes `K` 5, but an earlier one made it 3",
    );
    refused(
        "rule r\n  a: [M, N], b: [M, N]\n  (add_r2 a b) => (add_r2 a a), (add_r2 b b)\n",
        "the left side has 1 terms but the right side 2",
    );
    refused(
        "rule r\n  a: [M, N], b: [M, N]\n  (neg_r2 a) => (add_r2 a b)\n",
        "bad.rules:3:27: rule `r`: variable `b` is not bound by the left side",
    );
    refused(
        "rule r\n  a: [M, N]\n  (reshape_r2_r1 a {M * N}) <=> (reshape_r2_r1 a M)\n",
        "the two sides have different shapes: term 1 is",
    );
    refused(
        "rule r\n  a: [M, N]\n  (neg_r2 a) => a\nrule r\n  a: [M, N]\n  (neg_r2 a) => a\n",
        "bad.rules:4:6: rule `r`: a second rule of this name",
    );
    refused(
        "rule r\n  a: [M, N]\n  (neg_r2 a) a\n",
        "bad.rules:3:14: expected `=>` or `<=>`",
    );
    refused(
        "rule r\n  a: [M; N]\n",
        "bad.rules:2:8: unexpected character `;`",
    );
}
