//! `variants` and `generate`: every design against every mirroring scenario, and one
//! generated scenario printed.

use crate::*;

/// A bad-input error of `variants`: printed, exit 64.
pub(crate) fn variants_bad_input(message: &str) -> ExitCode {
    eprintln!("mirrorsim variants: {message}");
    ExitCode::from(EXIT_BAD_INPUT)
}

/// The designs of `--designs` (each value may hold several, comma-separated), in
/// [`mirrorsim::mirror::MirrorDesign::ALL`]'s order so the control row comes first; every
/// design when none is given.
pub(crate) fn variants_designs(
    names: &[String],
) -> Result<Vec<mirrorsim::mirror::MirrorDesign>, String> {
    use mirrorsim::mirror::MirrorDesign;

    if names.is_empty() {
        return Ok(MirrorDesign::ALL.to_vec());
    }
    let mut designs = std::collections::BTreeSet::new();
    for name in names.iter().flat_map(|value| value.split(',')) {
        let name = name.trim();
        if name.is_empty() {
            continue;
        }
        let design = MirrorDesign::from_name(name).ok_or_else(|| {
            format!(
                "--designs: unknown design `{name}` (known: {})",
                MirrorDesign::names()
            )
        })?;
        designs.insert(design);
    }
    if designs.is_empty() {
        return Err("--designs: no design named".to_owned());
    }
    Ok(designs.into_iter().collect())
}

/// The columns of `variants`: each file given, and for each directory (default `scenarios/`)
/// its `*.toml` files that mirror ([`mirrorsim_sim::commands::variants::is_mirroring`]), since the
/// designs differ only in the mirroring code.
pub(crate) fn variants_scenarios(
    paths: &[PathBuf],
) -> Result<Vec<mirrorsim_sim::commands::soak::SoakScenario>, String> {
    use mirrorsim_sim::commands::variants::is_mirroring;

    let given = if paths.is_empty() {
        vec![PathBuf::from("scenarios")]
    } else {
        paths.to_vec()
    };
    let mut scenarios = Vec::new();
    for path in given {
        let directory = path.is_dir();
        let loaded = soak_scenarios(std::slice::from_ref(&path))?;
        if !directory {
            scenarios.extend(loaded);
            continue;
        }
        let mirroring: Vec<_> = loaded
            .into_iter()
            .filter(|s| is_mirroring(&s.scenario))
            .collect();
        if mirroring.is_empty() {
            return Err(format!(
                "{} holds no mirroring scenario (one whose admin timeline has a create_mirror)",
                path.display()
            ));
        }
        scenarios.extend(mirroring);
    }
    Ok(scenarios)
}

pub(crate) fn variants_command(args: &VariantsArgs) -> ExitCode {
    use mirrorsim_sim::commands::variants::{self, VariantsConfig};

    if args.seeds == 0 {
        return variants_bad_input("--seeds must be at least 1");
    }
    if args.seed_base.checked_add(args.seeds - 1).is_none() {
        return variants_bad_input("--seed-base + --seeds runs past the largest seed (2^64 - 1)");
    }
    let jobs = args.jobs.unwrap_or_else(available_cores);
    let designs = match variants_designs(&args.designs) {
        Ok(designs) => designs,
        Err(message) => return variants_bad_input(&message),
    };
    let only_generated = matches!(args.generate, Some(GenerateArg::Only));
    let scenarios = if only_generated && args.scenarios.is_empty() {
        Vec::new()
    } else {
        match variants_scenarios(&args.scenarios) {
            Ok(scenarios) => scenarios,
            Err(message) => return variants_bad_input(&message),
        }
    };
    // Created now so a bad path is refused before the runs, not after them; like a failed
    // write, it is an output error (74).
    let out = match &args.out {
        None => None,
        Some(path) => match std::fs::File::create(path) {
            Ok(file) => Some((path, file)),
            Err(error) => {
                eprintln!(
                    "mirrorsim variants: --out: cannot create {}: {error}",
                    path.display()
                );
                return ExitCode::from(EXIT_OUTPUT_FAILED);
            }
        },
    };
    let config = VariantsConfig {
        designs,
        scenarios,
        seeds: args.seeds,
        seed_base: args.seed_base,
        jobs,
        generated: args.generate.is_some(),
    };
    let list = |names: Vec<&str>| names.join(",");
    say(&format!(
        "VARIANTS designs={} ({}) scenarios={} ({}) seeds={} seed_base={} jobs={jobs} runs={}",
        config.designs.len(),
        list(config.designs.iter().map(|d| d.name()).collect()),
        config.columns(),
        list(
            config
                .scenarios
                .iter()
                .map(|s| s.scenario.name.as_str())
                .chain(config.generated.then_some(variants::GENERATED_COLUMN))
                .collect()
        ),
        config.seeds,
        config.seed_base,
        config.total_runs()
    ));
    let cells = config.designs.len() * config.columns();
    let started = std::time::Instant::now();
    let mut finished = 0;
    let (matrix, wall) = variants::run_variants(
        &config,
        mirrorsim_sim::commands::runner::run,
        &mut |matrix, design, scenario| {
            finished += 1;
            let control = matrix.designs[design] == mirrorsim::mirror::MirrorDesign::Seed;
            let cell = matrix.cell(design, scenario);
            eprintln!(
                "variants [{finished}/{cells}] {} × {}: {}{} ({:.1}s)",
                matrix.designs[design],
                matrix.scenarios[scenario].name,
                cell.text(),
                if control && cell.caught() {
                    "  <- CONTROL FAILED"
                } else {
                    ""
                },
                started.elapsed().as_secs_f64()
            );
        },
    );
    say("");
    say(matrix.table().trim_end());
    say("");
    for line in matrix.summaries() {
        say(&line);
    }
    let details = matrix.details();
    if !details.is_empty() {
        say("");
        say("details (one line per caught cell):");
        for line in details {
            say(&format!("  {line}"));
        }
    }
    let markdown = matrix.markdown();
    if args.markdown {
        say("");
        say(markdown.trim_end());
    }
    let control_failures = matrix.control_failures();
    if !control_failures.is_empty() {
        let message = format!(
            "THE SEED DESIGN FAILED in {}: the control row must pass, so this is a bug in the model or a checker (replay commands above)",
            control_failures.join(", ")
        );
        say("");
        say(&format!("CONTROL FAILED: {message}"));
        eprintln!("mirrorsim variants: {message}");
    }
    say(&matrix.final_line(wall));
    let mut code = matrix.exit_code();
    if let Some((path, mut file)) = out {
        if let Err(error) = file
            .write_all(markdown.as_bytes())
            .and_then(|()| file.flush())
        {
            eprintln!(
                "mirrorsim variants: cannot write {}: {error}",
                path.display()
            );
            code = EXIT_OUTPUT_FAILED;
        }
    }
    ExitCode::from(code)
}

/// `generate`: the scenario of a seed, on stdout or in `--out`.
pub(crate) fn generate_command(args: &GenerateArgs) -> ExitCode {
    let seed = args.seed.unwrap_or_else(|| {
        let seed = random_seed() >> 11;
        eprintln!("mirrorsim generate: seed {seed}");
        seed
    });
    let text = mirrorsim_sim::scenario::generate::generated_toml(seed);
    if let Err(error) = mirrorsim_sim::scenario::generate::check_loads(seed, &text) {
        eprintln!("mirrorsim generate: the scenario of seed {seed} does not load (a bug): {error}");
        return ExitCode::from(EXIT_SHRINK_BUG);
    }
    match &args.out {
        None => {
            say(text.trim_end());
            ExitCode::SUCCESS
        }
        Some(path) => match std::fs::write(path, &text) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!(
                    "mirrorsim generate: cannot write {}: {error}",
                    path.display()
                );
                ExitCode::from(EXIT_OUTPUT_FAILED)
            }
        },
    }
}
