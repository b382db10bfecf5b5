//! `soak`: fresh seeds over the scenarios for a wall-clock budget, with the progress bar or
//! status lines and the report.

use crate::*;

/// A bad-input error of `soak`: printed, exit 64.
pub(crate) fn soak_bad_input(message: &str) -> ExitCode {
    eprintln!("mirrorsim soak: {message}");
    ExitCode::from(EXIT_BAD_INPUT)
}

pub(crate) fn soak_command(args: &SoakArgs) -> ExitCode {
    use mirrorsim_sim::commands::soak::{self, SoakConfig, StopAfter};

    let duration = match (args.duration, args.seeds) {
        (Some(duration), _) => Some(duration),
        (None, Some(_)) => None,
        (None, None) => Some(std::time::Duration::from_secs(600)),
    };
    if args.seeds == Some(0) {
        return soak_bad_input("--seeds must be at least 1");
    }
    let shard = args.shard;
    let jobs = args.jobs.unwrap_or_else(available_cores);
    let design = match parse_design(args.design.as_deref()) {
        Ok(design) => design,
        Err(message) => return soak_bad_input(&message),
    };
    let broken = match broken_switches(&args.broken) {
        Ok(broken) => broken,
        Err(message) => return soak_bad_input(&message),
    };
    let generate = match args.generate {
        None => soak::GenerateMode::Off,
        Some(GenerateArg::Mix) => soak::GenerateMode::Mix,
        Some(GenerateArg::Only) => soak::GenerateMode::Only,
    };
    if args.check_determinism == Some(0) {
        return soak_bad_input("--check-determinism must be at least 1");
    }
    let scenarios = if generate == soak::GenerateMode::Only && args.scenarios.is_empty() {
        Vec::new()
    } else {
        match soak_scenarios(&args.scenarios) {
            Ok(scenarios) => scenarios,
            Err(message) => return soak_bad_input(&message),
        }
    };
    let generated_dir = args.generated_dir.clone().unwrap_or_else(|| {
        args.out
            .as_ref()
            .and_then(|out| out.parent())
            .filter(|parent| !parent.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("target/soak-generated"), Path::to_path_buf)
    });
    // JSON consumers that read numbers as doubles keep a base below 2^53 exact.
    let seed_base = args.seed_base.unwrap_or_else(|| random_seed() >> 11);
    let config = SoakConfig {
        scenarios,
        jobs,
        shard,
        seed_base,
        stop: StopAfter {
            duration,
            seeds: args.seeds,
        },
        design,
        broken,
        generate,
        generated_dir,
        check_determinism: args.check_determinism,
    };
    if let Err(message) = config.check_seed_space() {
        return soak_bad_input(&message);
    }
    // Created after every flag is checked and before any seed runs; a path that cannot be
    // created is an output error (74), as a failed write is.
    let mut out = match &args.out {
        None => None,
        Some(path) => match std::fs::File::create(path) {
            Ok(file) => Some((path.clone(), BufWriter::new(file))),
            Err(error) => {
                eprintln!(
                    "mirrorsim soak: --out: cannot create {}: {error}",
                    path.display()
                );
                return ExitCode::from(EXIT_OUTPUT_FAILED);
            }
        },
    };
    say(&format!(
        "SOAK seed_base={seed_base} shard={shard} jobs={jobs} duration={} seeds={} scenarios={} ({}) generate={} check_determinism={}",
        duration.map_or("-".to_owned(), soak::format_duration),
        args.seeds.map_or("-".to_owned(), |n| n.to_string()),
        config.scenarios.len(),
        config
            .scenarios
            .iter()
            .map(|s| s.scenario.name.as_str())
            .collect::<Vec<_>>()
            .join(","),
        match config.generate {
            soak::GenerateMode::Off => "off",
            soak::GenerateMode::Mix => "mix",
            soak::GenerateMode::Only => "only",
        },
        config
            .check_determinism
            .map_or("off".to_owned(), |every| format!("1/{every}"))
    ));
    let mut observer = SoakProgress {
        config: &config,
        terminal: std::io::IsTerminal::is_terminal(&io::stderr()),
        stop: config.stop,
        out: out.as_mut().map(|(_, writer)| writer),
        out_failed: None,
        drawn: false,
        elapsed: std::time::Duration::ZERO,
    };
    let (summary, wall) = soak::soak(&config, mirrorsim_sim::commands::runner::run, &mut observer);
    observer.clear();
    let out_failed = observer.out_failed.take();
    say(summary.report(&config).trim_end());
    if summary.seed_space_exhausted {
        say("soak: stopped early: this shard's seeds reached the end of the 64-bit seed space");
    }
    say(&summary.final_line(&config, wall));
    let mut code = summary.exit_code();
    if args.require_preconditions && code == mirrorsim_sim::exit::PASS {
        let vacuous = summary.vacuous_invariants();
        if !vacuous.is_empty() {
            eprintln!(
                "mirrorsim soak: --require-preconditions: no seed exercised {}",
                vacuous.join(", ")
            );
            code = mirrorsim_sim::exit::SAFETY;
        }
    }
    let flushed = out.as_mut().map(|(_, writer)| writer.flush());
    if let Some(error) = out_failed.or(flushed.and_then(Result::err)) {
        let path = out.as_ref().map(|(path, _)| path.display().to_string());
        eprintln!(
            "mirrorsim soak: cannot write {}: {error} (the failure lines above are on stdout; \
             exit code {EXIT_OUTPUT_FAILED} even when seeds failed, since the file asked for \
             does not hold them)",
            path.unwrap_or_default()
        );
        code = EXIT_OUTPUT_FAILED;
    }
    ExitCode::from(code)
}

/// A `--jobs` value: 1 to 1024 worker threads.
pub(crate) fn parse_jobs(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(jobs) if (1..=1024).contains(&jobs) => Ok(jobs),
        _ => Err(format!(
            "bad value `{text}` (expected a whole number from 1 to 1024)"
        )),
    }
}

/// Worker threads when `--jobs` is not given: the available cores.
pub(crate) fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The scenarios of a soak: the files given (a directory stands for its `*.toml` files, in
/// name order), or every `scenarios/*.toml` under the current directory.
pub(crate) fn soak_scenarios(
    paths: &[PathBuf],
) -> Result<Vec<mirrorsim_sim::commands::soak::SoakScenario>, String> {
    use mirrorsim_sim::commands::soak::SoakScenario;
    use mirrorsim_sim::scenario::Scenario;

    let defaulted = paths.is_empty();
    let given = if defaulted {
        vec![PathBuf::from("scenarios")]
    } else {
        paths.to_vec()
    };
    let mut files = Vec::new();
    for path in given {
        if path.is_dir() {
            let entries = std::fs::read_dir(&path)
                .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .filter(|p| p.extension().is_some_and(|ext| ext == "toml"))
                .collect();
            found.sort();
            if found.is_empty() {
                return Err(format!("{} holds no *.toml scenario", path.display()));
            }
            files.extend(found);
        } else if defaulted {
            return Err(
                "no scenarios/ directory here: run from the repository root or pass --scenarios"
                    .to_owned(),
            );
        } else {
            files.push(path);
        }
    }
    files
        .into_iter()
        .map(|path| match Scenario::load(&path) {
            Ok(scenario) => Ok(SoakScenario { path, scenario }),
            Err(error) => Err(error.to_string()),
        })
        .collect()
}

/// The soak's progress display and failure writer.
pub(crate) struct SoakProgress<'a> {
    /// The soak (to write a failing generated scenario where its failure line says).
    config: &'a mirrorsim_sim::commands::soak::SoakConfig,
    /// stderr is a terminal: redraw a bar in place; otherwise print a status line now and then.
    terminal: bool,
    stop: mirrorsim_sim::commands::soak::StopAfter,
    out: Option<&'a mut BufWriter<std::fs::File>>,
    /// The first error writing `out`.
    out_failed: Option<io::Error>,
    /// A bar is on the terminal's last line.
    drawn: bool,
    elapsed: std::time::Duration,
}

impl SoakProgress<'_> {
    /// Removes the bar, if one is drawn.
    pub(crate) fn clear(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[2K");
            self.drawn = false;
        }
    }

    pub(crate) fn status(&self, summary: &mirrorsim_sim::commands::soak::Summary) -> String {
        let minutes = self.elapsed.as_secs_f64().max(1e-9) / 60.0;
        format!(
            "seeds={} failures={} seeds/min={:.0} sim-s/wall-s={:.0}",
            summary.seeds,
            summary.failures(),
            summary.seeds as f64 / minutes,
            summary.simulated_ms as f64 / 1000.0 / (minutes * 60.0)
        )
    }

    /// Done so far, from 0 to 1, by time or by seeds, whichever is further.
    pub(crate) fn fraction(&self, summary: &mirrorsim_sim::commands::soak::Summary) -> f64 {
        let by_time = self.stop.duration.map_or(0.0, |d| {
            self.elapsed.as_secs_f64() / d.as_secs_f64().max(1e-9)
        });
        let by_seeds = self
            .stop
            .seeds
            .map_or(0.0, |n| summary.seeds as f64 / n.max(1) as f64);
        by_time.max(by_seeds).clamp(0.0, 1.0)
    }

    pub(crate) fn draw(&mut self, summary: &mirrorsim_sim::commands::soak::Summary) {
        const WIDTH: usize = 30;
        let done = (self.fraction(summary) * WIDTH as f64) as usize;
        let budget = self.stop.duration.map_or(String::new(), |d| {
            format!("/{}", mirrorsim_sim::commands::soak::format_duration(d))
        });
        eprint!(
            "\r\x1b[2K[{}{}] {}{budget} {}",
            "#".repeat(done),
            "-".repeat(WIDTH - done),
            mirrorsim_sim::commands::soak::format_duration(self.elapsed),
            self.status(summary)
        );
        self.drawn = true;
    }
}

/// How often a status line is printed when stderr is not a terminal.
pub(crate) const STATUS_EVERY: std::time::Duration = std::time::Duration::from_secs(15);

impl mirrorsim_sim::commands::soak::Observer for SoakProgress<'_> {
    fn seed_done(
        &mut self,
        outcome: &mirrorsim_sim::commands::soak::SeedOutcome,
        failure: Option<&mirrorsim_sim::commands::soak::Failure>,
        summary: &mirrorsim_sim::commands::soak::Summary,
    ) {
        let Some(failure) = failure else {
            return;
        };
        self.clear();
        if outcome.scenario == mirrorsim_sim::commands::soak::ScenarioRef::Generated {
            if let Err(error) =
                mirrorsim_sim::commands::soak::write_generated(self.config, outcome.seed)
            {
                eprintln!(
                    "mirrorsim soak: cannot write the generated scenario {}: {error}",
                    failure.path
                );
                self.out_failed.get_or_insert(error);
            }
        }
        let line = failure.line();
        say(&line);
        if let Some(out) = self.out.as_mut() {
            let written = writeln!(out, "{line}").and_then(|()| out.flush());
            if let Err(error) = written {
                self.out_failed.get_or_insert(error);
            }
        }
        if self.terminal {
            self.draw(summary);
        }
    }

    fn tick(
        &mut self,
        summary: &mirrorsim_sim::commands::soak::Summary,
        elapsed: std::time::Duration,
    ) {
        let previous = self.elapsed;
        self.elapsed = elapsed;
        if self.terminal {
            self.draw(summary);
        } else if elapsed.as_secs() / STATUS_EVERY.as_secs()
            > previous.as_secs() / STATUS_EVERY.as_secs()
        {
            eprintln!(
                "soak progress elapsed={} {}",
                mirrorsim_sim::commands::soak::format_duration(elapsed),
                self.status(summary)
            );
        }
    }
}
