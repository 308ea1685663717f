//! Library matmuls: recognizing (batched) matmul blocks and calling the
//! matmul library on them.
