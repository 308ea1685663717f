use std::collections::HashMap;
fn try_check(text: &str) {
    match tc::check_source(text) {
        Ok(_) => println!("OK: {text}"),
        Err(d) => println!("ERR: {text}\n{}", tc::render_diagnostics(&d, "x", text)),
    }
}
#[test]
fn scratch() {
    try_check("def f(float(4) A) -> (O) { O(i) +=! A(i-1) where i in 0:4 }");
    try_check(
        "def f(float(4) A) -> (O) { O(i) = A(i) where i in 0:4\n O(i) += A(i) where i in 0:4 }",
    );
    try_check("def f(float(4) A) -> (O) { O(i) = A(i+1) where i in 0:4 }");
    try_check("def f(float(4) A) -> (O) { O(i) = A(i) where i in 2:2 }");
    try_check("def f(float(4) A) -> (O) { O(i) = 0.5 * A(i) where i in 0:4 }");
    try_check("def f(float(4) A) -> (O) { O(i) = A(i) where i in 0:4, k in 0:3 }");
    try_check("def f(float(4) A) -> (O) { O(i, j) = A(i) where i in 0:4, j in 0:3 }");
    try_check(
        "def f(float(4) A) -> (O) { O(i, j) = (i < 2 ? A(i) : A(i-2)) where i in 0:4, j in 0:3 }",
    );
    try_check("def f(float(4) A) -> (O) { O(i) = 2 * 3 * A(i) - -A(i) where i in 0:4 }");
    let text =
        "def f(float(N) X) -> (O) { O(i,j,k) = X(i+j) + X(k) where i in 0:2, j in 0:2, k in 0:2 }
def g(float(N) X) -> (O) { O(i,j,k) = X(i) + X(j+k) where i in 0:2, j in 0:2, k in 0:2 }";
    let p = tc::check_source(text).unwrap().program;
    let sizes: HashMap<String, i64> = [("N".to_string(), 3)].into();
    let r = opt::verify::verify(
        &p,
        "f",
        &p,
        "g",
        &opt::verify::Options {
            sizes,
            trials: None,
            seed: 1,
        },
    )
    .unwrap();
    println!("{}", opt::verify::print_report(&r));
}
