//! Fails loudly when the build lacks `--cfg madsim`.
//!
//! `.cargo/config.toml` sets the flag for every build in this tree. A `RUSTFLAGS` environment
//! variable (even an empty one) replaces it, and then every simulation test compiles to nothing
//! and `cargo test` reports green over zero tests (madsim-notes §1). This test is not itself
//! conditional, so it catches that.

#[test]
#[allow(clippy::assertions_on_constants)] // The constant is the point: it is fixed at build time.
fn built_with_cfg_madsim() {
    assert!(
        cfg!(madsim),
        "built without --cfg madsim: unset RUSTFLAGS (it replaces .cargo/config.toml's flags)"
    );
}
