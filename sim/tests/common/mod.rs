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

/// The names of the shipped scenario files (`scenarios/*.toml`, without the extension), sorted.
#[allow(dead_code)]
pub fn shipped_scenarios() -> Vec<String> {
    let directory = repository_root().join("scenarios");
    let mut names: Vec<String> = std::fs::read_dir(&directory)
        .unwrap_or_else(|error| panic!("{}: {error}", directory.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "toml")
        })
        .map(|path| {
            path.file_stem()
                .and_then(|stem| stem.to_str())
                .expect("a UTF-8 file name")
                .to_owned()
        })
        .collect();
    names.sort();
    names
}
