//! Helpers the simulator's integration tests share (each test binary compiles this module and
//! uses what it needs, hence the `dead_code` allowances).

use std::path::{Path, PathBuf};

use mirrorsim_sim::scenario::Scenario;

/// The repository root, where `scenarios/` and the README live.
#[allow(dead_code)]
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("sim/ has a parent")
        .to_path_buf()
}

/// `scenarios/NAME.toml`, loaded; a load error fails the test with its message.
#[allow(dead_code)]
pub fn load(name: &str) -> Scenario {
    let path = repository_root()
        .join("scenarios")
        .join(format!("{name}.toml"));
    Scenario::load(&path).unwrap_or_else(|error| panic!("{error}"))
}
