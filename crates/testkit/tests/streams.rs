//! testkit's `Rng` draws the stream of `interp::Tensor::random`: the same
//! seed gives the same values, element for element.

use interp::Tensor;
use ir::DType;
use testkit::Rng;

#[test]
fn the_stream_is_the_interpreters() {
    for seed in [0, 1, 7, 0x5eed, u64::MAX] {
        let floats = Tensor::random(DType::F32, &[257], seed).to_f64_vec();
        let mut g = Rng::new(seed);
        let drawn: Vec<f64> = (0..257).map(|_| g.unit_f32()).collect();
        assert_eq!(floats, drawn, "float32, seed {seed}");

        let doubles = Tensor::random(DType::F64, &[257], seed).to_f64_vec();
        let mut g = Rng::new(seed);
        let drawn: Vec<f64> = (0..257).map(|_| g.unit_f64()).collect();
        assert_eq!(doubles, drawn, "float64, seed {seed}");

        // Integers are the top three bits of each draw.
        let ints = Tensor::random(DType::I32, &[257], seed).to_f64_vec();
        let mut g = Rng::new(seed);
        let drawn: Vec<f64> = (0..257).map(|_| (g.next_u64() >> 61) as f64).collect();
        assert_eq!(ints, drawn, "int32, seed {seed}");
    }
}

#[test]
fn the_prelude_is_checked_once() {
    let a = testkit::prelude();
    let b = testkit::prelude();
    assert!(std::ptr::eq(a, b), "one program per test binary");
    assert!(
        a.defs.iter().any(|d| d.name == "matmul"),
        "the prelude has matmul"
    );
    assert!(
        ir::verify_program(a).is_ok(),
        "the checked prelude verifies"
    );
}
