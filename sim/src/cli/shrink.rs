//! `shrink`: a failing seed's scenario made smaller, written and checked.

use crate::*;

/// A bad-input error of `shrink`: printed, exit 64.
pub(crate) fn shrink_bad_input(message: &str) -> ExitCode {
    eprintln!("mirrorsim shrink: {message}");
    ExitCode::from(EXIT_BAD_INPUT)
}

pub(crate) fn shrink_command(args: &ShrinkArgs) -> ExitCode {
    use mirrorsim_sim::commands::shrink::{self, ShrinkError, ShrinkOptions};
    use mirrorsim_sim::scenario::Scenario;

    let mut scenario = match Scenario::load(&args.scenario) {
        Ok(scenario) => scenario,
        Err(error) => return shrink_bad_input(&error.to_string()),
    };
    match parse_design(args.design.as_deref()) {
        Ok(Some(design)) => {
            scenario.design = Some(toml::Spanned::new(0..0, design.name().to_owned()));
        }
        Ok(None) => {}
        Err(message) => return shrink_bad_input(&message),
    }
    let options = ShrinkOptions {
        seed: args.seed,
        broken: match broken_switches(&args.broken) {
            Ok(broken) => broken,
            Err(message) => return shrink_bad_input(&message),
        },
        budget: args.budget,
    };
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!("{}-seed{}-shrunk.toml", scenario.name, args.seed))
    });
    say(&format!(
        "shrink: scenario={} seed={} budget={} out={}",
        args.scenario.display(),
        args.seed,
        args.budget,
        out.display()
    ));
    let started = std::time::Instant::now();
    let shrunk = match shrink::shrink_seed(
        &scenario,
        &options,
        mirrorsim_sim::commands::runner::run,
        &mut |line| say(line),
    ) {
        Ok(shrunk) => shrunk,
        Err(ShrinkError::Passes) => {
            return shrink_bad_input(&format!(
                "nothing to shrink: seed {} passes {}",
                args.seed,
                args.scenario.display()
            ))
        }
        Err(error) => {
            eprintln!("mirrorsim shrink: {error}");
            return ExitCode::from(EXIT_SHRINK_BUG);
        }
    };
    let text = match shrink::render(&shrunk, &args.scenario, &out, &options) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("mirrorsim shrink: cannot write the scenario as TOML: {error}");
            return ExitCode::from(EXIT_SHRINK_BUG);
        }
    };
    if let Err(error) = std::fs::write(&out, text) {
        eprintln!("mirrorsim shrink: cannot write {}: {error}", out.display());
        return ExitCode::from(EXIT_OUTPUT_FAILED);
    }
    say(&format!(
        "shrink: done runs={} kept={} wall={:.1}s{}",
        shrunk.runs,
        shrunk.steps,
        started.elapsed().as_secs_f64(),
        if shrunk.budget_exhausted {
            " (budget exhausted: a larger --budget may shrink further)"
        } else {
            ""
        }
    ));
    say(&format!("shrink: before {}", shrunk.before));
    say(&format!("shrink: after  {}", shrunk.after));
    // The file as written, loaded as `run` loads it, must fail the same way.
    let verified = Scenario::load(&out).map(|written| {
        let run_options = mirrorsim_sim::commands::runner::RunOptions {
            broken: options.broken.clone(),
            ..mirrorsim_sim::commands::runner::RunOptions::new(args.seed)
        };
        let result = mirrorsim_sim::commands::soak::run_isolated(
            &mirrorsim_sim::commands::runner::run,
            &written,
            &run_options,
        );
        shrink::target_of(&result, args.seed)
    });
    match verified {
        Ok(Some(target)) if target.invariant == shrunk.target.invariant => {
            say(&format!(
                "shrink: wrote {} (checked: it fails {} with seed {})",
                out.display(),
                target.invariant,
                args.seed
            ));
            say(&format!(
                "shrink: reproduce: {}",
                shrink::reproduce_command(&out, args.seed, &options.broken)
            ));
            ExitCode::SUCCESS
        }
        Ok(other) => {
            eprintln!(
                "mirrorsim shrink: {} was written but {} with seed {}, not {}: a bug in `shrink`",
                out.display(),
                other.map_or("passes".to_owned(), |t| format!("fails {}", t.invariant)),
                args.seed,
                shrunk.target.invariant
            );
            ExitCode::from(EXIT_SHRINK_BUG)
        }
        Err(error) => {
            eprintln!("mirrorsim shrink: the written file does not load: {error}");
            ExitCode::from(EXIT_SHRINK_BUG)
        }
    }
}
