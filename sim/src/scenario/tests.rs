//! The loader's tests: every rule of `validate` with the file, line and field path its error
//! names, the path-to-line mapping on real files, and the round trip `to_toml` → `parse`.

use super::*;

const MINIMAL: &str = r#"
duration_ms = 1000
[[clusters]]
brokers = 3
[[topics]]
cluster = "a"
name = "orders"
partitions = 2
replication_factor = 3
min_insync_replicas = 2
[[producers]]
cluster = "a"
topic = "orders"
"#;

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(Path::new("test.toml"), text)
}

#[test]
fn scenario_minimal_file_parses_with_defaults() {
    let scenario = parse(MINIMAL).unwrap();
    assert_eq!(scenario.name, "test");
    assert_eq!(scenario.heal_ms, 10_000);
    assert_eq!(scenario.producers[0].acks, AcksSpec::All);
    assert_eq!(scenario.mirror_design(), MirrorDesign::Seed);
}

#[test]
fn scenario_broken_switches_are_checked() {
    let scenario = parse(&format!("broken = [\"ack-before-replication\"]\n{MINIMAL}")).unwrap();
    assert_eq!(scenario.broken, vec!["ack-before-replication".to_owned()]);
    let error = parse(&format!("broken = [\"nope\"]\n{MINIMAL}")).unwrap_err();
    assert_eq!(error.field, "broken[0]");
    assert!(
        error.to_string().contains("unknown broken switch \"nope\""),
        "{error}"
    );
}

#[test]
fn scenario_design_is_read_and_unknown_designs_are_refused_at_their_line() {
    let scenario = parse(&format!("design = \"abort-markers\"\n{MINIMAL}")).unwrap();
    assert_eq!(scenario.mirror_design(), MirrorDesign::AbortMarkers);
    let error = parse(&format!("design = \"lmo\"\n{MINIMAL}")).unwrap_err();
    assert_eq!(error.field, "design");
    assert_eq!(error.line, Some(1));
    assert!(
        error.to_string().contains("unknown design \"lmo\""),
        "{error}"
    );
}

#[test]
fn scenario_errors_name_file_line_and_field() {
    let error = parse(&format!(
        "{MINIMAL}\n[[consumers]]\ncluster = \"b\"\ntopic = \"orders\"\n"
    ))
    .unwrap_err();
    assert_eq!(error.field, "consumers[0].cluster");
    assert_eq!(error.line, Some(16));
    assert!(
        error
            .to_string()
            .starts_with("test.toml:16: field `consumers[0].cluster`"),
        "{error}"
    );

    let error =
        parse(&MINIMAL.replace("replication_factor = 3", "replication_factor = 4")).unwrap_err();
    assert_eq!(error.field, "topics[0].replication_factor");
    assert_eq!(error.line, Some(9));

    let error =
        parse(&MINIMAL.replace("duration_ms = 1000", "duration_ms = \"soon\"")).unwrap_err();
    assert_eq!(error.line, Some(2));

    // MINIMAL ends inside `[[producers]]`, so the key lands in its table.
    let error = parse(&format!("{MINIMAL}\nbogus = 1\n")).unwrap_err();
    assert_eq!(error.field, "producers[0].bogus");
    assert_eq!(error.line, Some(15));
    let error = parse(&format!("bogus = 1\n{MINIMAL}")).unwrap_err();
    assert_eq!((error.field.as_str(), error.line), ("bogus", Some(1)));

    // A codec Kafka does not have is refused at the producer's key, naming the ones it has.
    let error = parse(&format!("{MINIMAL}\ncompression = \"brotli\"\n")).unwrap_err();
    assert_eq!(
        (error.field.as_str(), error.line),
        ("producers[0].compression", Some(15))
    );
    assert!(
        error.message.contains("`gzip`, `snappy`, `lz4`, `zstd`"),
        "{error}"
    );
    let scenario = parse(&format!("{MINIMAL}\ncompression = \"lz4\"\n")).unwrap();
    assert_eq!(scenario.producers[0].compression, CompressionSpec::Lz4);
}

#[test]
fn scenario_fault_targets_are_checked() {
    let kill =
        |node: &str| format!("{MINIMAL}\n[[faults.kill]]\nat_ms = 10\nnodes = [\"{node}\"]\n");
    let error = parse(&kill("a-broker-4")).unwrap_err();
    assert_eq!(error.field, "faults.kill[0].nodes[0]");
    assert_eq!(error.line, Some(17));
    assert!(parse(&kill("a-follower:orders:1")).is_ok());
    assert!(parse(&kill("a-leader:orders:1")).is_ok());
    assert!(parse(&kill("a-replica:orders:1:3")).is_ok());
    // An unknown kind is an unknown table of `[faults]`, at its header.
    let text = format!("{MINIMAL}\n[[faults.explode]]\nat_ms = 10\nnodes = [\"a-broker-1\"]\n");
    let error = parse(&text).unwrap_err();
    assert_eq!(
        (error.field.as_str(), error.line),
        ("faults.explode[0]", Some(15))
    );
    assert!(
        error
            .message
            .starts_with("unknown field `explode`, expected one of `swarm`"),
        "{error}"
    );
}

/// Two clusters, `orders` on b; admin entries are appended from line 13.
const TWO_CLUSTERS: &str = r#"
duration_ms = 5000
[[clusters]]
brokers = 3
[[clusters]]
brokers = 3
mirror_state_partitions = 3
[[topics]]
cluster = "b"
name = "orders"
partitions = 1
replication_factor = 3
"#;

/// Parses [`TWO_CLUSTERS`] with `tail` appended; returns the error's field, line and text.
fn error_of(tail: &str) -> (String, Option<usize>, String) {
    let error = parse(&format!("{TWO_CLUSTERS}{tail}")).unwrap_err();
    (error.field.clone(), error.line, error.to_string())
}

#[test]
fn scenario_admin_timeline_parses() {
    let scenario = parse(&format!(
        "{TWO_CLUSTERS}[[admin.create_mirror]]\nat_ms = 0\ncluster = \"b\"\n\
         mirror = \"m\"\nsource = \"a\"\n\
         [[admin.add_topics]]\nat_ms = 0\ncluster = \"b\"\nmirror = \"m\"\n\
         topics = [\"orders\"]\n\
         [[admin.delete_mirror]]\nat_ms = 10\ncluster = \"b\"\nmirror = \"m\"\n"
    ))
    .unwrap();
    let kinds: Vec<AdminOpKind> = scenario.admin.iter().map(AdminOpSpec::kind).collect();
    assert_eq!(
        kinds,
        [
            AdminOpKind::CreateMirror,
            AdminOpKind::AddTopics,
            AdminOpKind::DeleteMirror
        ]
    );
    assert_eq!(scenario.clusters[1].mirror_state_replication_factor(), 3);
    assert_eq!(scenario.clusters[0].mirror_state_partitions, 50);
}

#[test]
fn scenario_admin_errors_name_file_line_and_field() {
    // (operation, body after at_ms and cluster, field, line, words of the message); the entry
    // starts on line 13.
    let cases = [
        (
            "explode",
            "mirror = \"m\"\n",
            "admin.explode[0]",
            13,
            "unknown field `explode`, expected one of `create_mirror`, `alter_mirror`, `add_topics`",
        ),
        (
            "create_mirror",
            "mirror = \"m\"\n",
            "admin.create_mirror[0].source",
            13,
            "missing field `source`",
        ),
        (
            "create_mirror",
            "mirror = \"m\"\nsource = \"b\"\n",
            "admin.create_mirror[0].source",
            17,
            "must differ from the destination cluster `b`",
        ),
        (
            "create_mirror",
            "mirror = \"m\"\nsource = \"c\"\n",
            "admin.create_mirror[0].source",
            17,
            "unknown cluster \"c\"",
        ),
        (
            "create_mirror",
            "mirror = \"m\"\nsource = \"a\"\nconfigs = { \"bootstrap.servers\" = \"x\" }\n",
            "admin.create_mirror[0].configs.\"bootstrap.servers\"",
            18,
            "comes from `source`",
        ),
        (
            "create_mirror",
            "mirror = \"m\"\nsource = \"a\"\ntopics = [\"orders\"]\n",
            "admin.create_mirror[0].topics",
            18,
            "unknown field `topics`, expected one of `at_ms`, `cluster`, `mirror`, `source`, \
             `configs`",
        ),
        (
            "create_mirror",
            "mirror = \"m\"\nsource = \"a\"\nconfigs = { \"invalid.config\" = \"foo\" }\n",
            "admin.create_mirror[0].configs.\"invalid.config\"",
            18,
            "not a property a mirror takes",
        ),
        (
            "alter_mirror",
            "mirror = \"m\"\n",
            "admin.alter_mirror[0].configs",
            13,
            "missing field `configs`",
        ),
        (
            "alter_mirror",
            "mirror = \"m\"\nconfigs = {}\n",
            "admin.alter_mirror[0].configs",
            17,
            "`alter_mirror` needs at least one config",
        ),
        (
            "alter_mirror",
            "mirror = \"m\"\nconfigs = { \"bootstrap.servers\" = \"a-broker-1\\n\" }\n",
            "admin.alter_mirror[0].configs.\"bootstrap.servers\"",
            17,
            "control character",
        ),
        (
            "add_topics",
            "mirror = \"m\"\ntopics = [\"orders\", \"payments\"]\n",
            "admin.add_topics[0].topics[1]",
            17,
            "topic \"payments\" is not declared on cluster `b`",
        ),
        (
            "pause_topics",
            "mirror = \"m\"\ntopics = [\"orders\", \"orders\"]\n",
            "admin.pause_topics[0].topics[1]",
            17,
            "listed twice",
        ),
        (
            "remove_topics",
            "mirror = \"m\"\n",
            "admin.remove_topics[0].topics",
            13,
            "missing field `topics`",
        ),
        (
            "remove_topics",
            "mirror = \"m\"\ntopics = [\"orders\"]\ninclude = [\"orders-.*\"]\n",
            "admin.remove_topics[0].include",
            18,
            "unknown field `include`",
        ),
        (
            "add_topics",
            "mirror = \"m\"\ntopics = [\"orders\"]\ninclude = [\"orders-(us|eu)\"]\n",
            "admin.add_topics[0].include[0]",
            18,
            "not a topic filter",
        ),
        (
            "remove_topics",
            "mirror = \"m\"\ntopics = []\n",
            "admin.remove_topics[0].topics",
            17,
            "`remove_topics` needs topics",
        ),
        (
            "delete_mirror",
            "mirror = \"m\"\nsource = \"a\"\n",
            "admin.delete_mirror[0].source",
            17,
            "unknown field `source`, expected one of `at_ms`, `cluster`, `mirror`",
        ),
        (
            "delete_mirror",
            "mirror = \"m\"\nconfigs = { \"k\" = \"v\" }\n",
            "admin.delete_mirror[0].configs",
            17,
            "unknown field `configs`",
        ),
        (
            "create_topics",
            "topics = [\"orders\"]\n",
            "admin.create_topics[0].topics[0]",
            16,
            "created at the start; a topic `create_topics` creates is declared with `deferred = true`",
        ),
        (
            "alter_topic_configs",
            "topic = \"orders\"\nconfigs = { \"min.insync.replicas\" = \"1\" }\n",
            "admin.alter_topic_configs[0].configs.\"min.insync.replicas\"",
            17,
            "fixed for the run: set it in `[[topics]]`",
        ),
        (
            "alter_topic_configs",
            "topic = \"payments\"\nconfigs = { \"retention.ms\" = \"1\" }\n",
            "admin.alter_topic_configs[0].topic",
            16,
            "topic \"payments\" is not declared on cluster `b`",
        ),
        (
            "create_acls",
            "acls = []\n",
            "admin.create_acls[0].acls",
            16,
            "`create_acls` needs at least one binding",
        ),
        (
            "delete_acls",
            "acls = [{ resource = \"orders\", principal = \"User:x\", operation = \"Read\", permission = \"Allow\" }]\n",
            "admin.delete_acls[0].acls[0].resource",
            16,
            "is not `TYPE:NAME`",
        ),
        (
            "create_acls",
            "acls = [{ resource = \"topic:orders\", principal = \"User:x\", operation = \"Read\", permission = \"allow\" }]\n",
            "admin.create_acls[0].acls[0].permission",
            16,
            "neither `Allow` nor `Deny`",
        ),
    ];
    for (op, body, field, line, words) in cases {
        let (error_field, error_line, text) = error_of(&format!(
            "[[admin.{op}]]\nat_ms = 100\ncluster = \"b\"\n{body}"
        ));
        assert_eq!(error_field, field, "{text}");
        assert_eq!(error_line, Some(line), "{text}");
        assert!(
            text.starts_with(&format!("test.toml:{line}: field `{field}`: ")),
            "{text}"
        );
        assert!(text.contains(words), "{text}");
    }
}

/// Fuzzing found this (`fuzz_input`, a topic renamed and an op emptied in `active_passive`):
/// the topic checks of the workloads and fault targets ask which topics a `create_mirror`
/// adopts, and read the admin ops' kinds before their own check had refused an unknown one,
/// so the loader panicked instead of refusing the file. An operation of no known name is now
/// refused by serde before any check runs.
#[test]
fn an_unknown_admin_op_is_refused_before_a_topic_check_reads_the_ops() {
    let text = r#"duration_ms = 5000
[[clusters]]
brokers = 3
[[clusters]]
brokers = 3
[[producers]]
cluster = "a"
topic = "orders"
[[admin.""]]
at_ms = 0
cluster = "b"
mirror = "m"
source = "a"
"#;
    assert_refused(
        text,
        "admin.\"\"[0]",
        9,
        "unknown field ``, expected one of `create_mirror`",
    );
    // A fault target's topic check reads them too.
    let text = text.replace(
        "[[producers]]\ncluster = \"a\"\ntopic = \"orders\"\n",
        "[[faults.kill]]\nat_ms = 10\nnodes = [\"b-leader:orders:0\"]\n",
    );
    assert_refused(&text, "admin.\"\"[0]", 9, "unknown field ``");
}

#[test]
fn scenario_admin_cluster_and_times_are_checked() {
    let (field, line, _) =
        error_of("[[admin.delete_mirror]]\nat_ms = 0\ncluster = \"c\"\nmirror = \"m\"\n");
    assert_eq!(
        (field.as_str(), line),
        ("admin.delete_mirror[0].cluster", Some(15))
    );
    let (field, line, text) =
        error_of("[[admin.delete_mirror]]\nat_ms = 5000\ncluster = \"b\"\nmirror = \"m\"\n");
    assert_eq!(
        (field.as_str(), line),
        ("admin.delete_mirror[0].at_ms", Some(14))
    );
    assert!(text.contains("duration_ms = 5000"), "{text}");
    // A cluster's operations run in list order, across operations (the order of their
    // tables); another cluster's times are independent.
    let two = |cluster: &str| {
        format!(
            "[[admin.describe_mirror]]\nat_ms = 200\ncluster = \"b\"\nmirror = \"m\"\n\
             [[admin.delete_mirror]]\nat_ms = 100\ncluster = \"{cluster}\"\nmirror = \"m\"\n"
        )
    };
    let (field, line, text) = error_of(&two("b"));
    assert_eq!(
        (field.as_str(), line),
        ("admin.delete_mirror[0].at_ms", Some(18)),
        "{text}"
    );
    assert!(text.contains("previous admin op (at_ms = 200)"), "{text}");
    assert!(parse(&format!("{TWO_CLUSTERS}{}", two("a"))).is_ok());
    // A mirror operation needs the mirror; a topic operation takes none, and only
    // create_partitions takes (and needs) a partition count.
    let (field, _, text) = error_of("[[admin.delete_mirror]]\nat_ms = 0\ncluster = \"b\"\n");
    assert_eq!(field, "admin.delete_mirror[0].mirror");
    assert!(text.contains("missing field `mirror`"), "{text}");
    let topic_op = |op: &str, extra: &str| {
        format!("[[admin.{op}]]\nat_ms = 0\ncluster = \"b\"\ntopics = [\"orders\"]\n{extra}")
    };
    for (op, extra, expected, words) in [
        (
            "delete_topics",
            "mirror = \"m\"\n",
            "admin.delete_topics[0].mirror",
            "unknown field `mirror`",
        ),
        (
            "create_partitions",
            "",
            "admin.create_partitions[0].partitions",
            "missing field `partitions`",
        ),
        (
            "create_partitions",
            "partitions = 0\n",
            "admin.create_partitions[0].partitions",
            "must be between 1 and 64",
        ),
        (
            "delete_records",
            "partitions = 3\n",
            "admin.delete_records[0].partitions",
            "unknown field `partitions`",
        ),
    ] {
        let (field, _, text) = error_of(&topic_op(op, extra));
        assert_eq!(field, expected, "{op} {extra}: {text}");
        assert!(text.contains(words), "{text}");
    }
    for (op, extra) in [
        ("delete_topics", ""),
        ("delete_records", ""),
        ("create_partitions", "partitions = 4\n"),
    ] {
        assert!(
            parse(&format!("{TWO_CLUSTERS}{}", topic_op(op, extra))).is_ok(),
            "{op} {extra}"
        );
    }
}

#[test]
fn scenario_start_ms_and_mirror_state_sizes_are_checked() {
    let (field, line, _) =
        error_of("[[producers]]\ncluster = \"b\"\ntopic = \"orders\"\nstart_ms = 5000\n");
    assert_eq!((field.as_str(), line), ("producers[0].start_ms", Some(16)));
    let (field, line, _) =
        error_of("[[consumers]]\ncluster = \"b\"\ntopic = \"orders\"\nstart_ms = 9000\n");
    assert_eq!((field.as_str(), line), ("consumers[0].start_ms", Some(16)));
    assert!(parse(&format!(
        "{TWO_CLUSTERS}[[consumers]]\ncluster = \"b\"\ntopic = \"orders\"\nstart_ms = 4999\n"
    ))
    .is_ok());
    // A producer's stop_ms: inside the fault phase, after its start.
    for (timing, words) in [
        ("stop_ms = 5000\n", "before the end of the fault phase"),
        ("start_ms = 2000\nstop_ms = 2000\n", "after start_ms (2000)"),
        ("stop_ms = 0\n", "after start_ms (0)"),
    ] {
        let (field, _, text) = error_of(&format!(
            "[[producers]]\ncluster = \"b\"\ntopic = \"orders\"\n{timing}"
        ));
        assert_eq!(field, "producers[0].stop_ms", "{timing}");
        assert!(text.contains(words), "{timing}: {text}");
    }
    assert!(parse(&format!(
        "{TWO_CLUSTERS}[[producers]]\ncluster = \"b\"\ntopic = \"orders\"\nstart_ms = 1000\nstop_ms = 4999\n"
    ))
    .is_ok());

    let error = parse(&TWO_CLUSTERS.replace(
        "mirror_state_partitions = 3",
        "mirror_state_replication_factor = 4",
    ))
    .unwrap_err();
    assert_eq!(error.field, "clusters[1].mirror_state_replication_factor");
    assert_eq!(error.line, Some(7));
    let error =
        parse(&TWO_CLUSTERS.replace("mirror_state_partitions = 3", "mirror_state_partitions = 0"))
            .unwrap_err();
    assert_eq!(error.field, "clusters[1].mirror_state_partitions");
    assert_eq!(error.line, Some(7));
    // A small cluster gets a small replication factor unless told otherwise.
    let scenario =
        parse(&TWO_CLUSTERS.replace("brokers = 3\n[[clusters]]", "brokers = 1\n[[clusters]]"))
            .unwrap();
    assert_eq!(scenario.clusters[0].mirror_state_replication_factor(), 1);
}

#[test]
fn scenario_hold_back_probability_and_clock_drift_are_checked() {
    let fault =
        |kind: &str, body: &str| format!("{MINIMAL}\n[[faults.{kind}]]\nat_ms = 10\n{body}");
    // A slow clock (a negative drift) still moves forward, so it is allowed.
    let scenario = parse(&fault(
        "hold_back",
        "nodes = [\"a-broker-1\"]\nhold_ms = 900\nprobability = 0.25\n\
         [[faults.clock_skew]]\nat_ms = 20\nnodes = [\"a-broker-2\"]\n\
         jump_ms = 300\ndrift_ppm = -1500\n",
    ))
    .unwrap();
    let [ScriptedFault::HoldBack(hold), ScriptedFault::ClockSkew(skew)] =
        &scenario.faults.scripted[..]
    else {
        panic!(
            "a hold-back and a clock skew: {:?}",
            scenario.faults.scripted
        )
    };
    assert_eq!((hold.hold_ms, hold.probability), (900, Some(0.25)));
    assert_eq!((skew.jump_ms, skew.drift_ppm), (Some(300), Some(-1500)));
    // (kind, body, field, line of the offending value, words of the message); the fault
    // starts on line 15, its body on line 17.
    let cases = [
        (
            "hold_back",
            "hold_ms = 500\nprobability = 1.5\n",
            "faults.hold_back[0].probability",
            18,
            "a probability in (0, 1]",
        ),
        (
            "packet_loss",
            "probability = 0.1\nhold_ms = 5\n",
            "faults.packet_loss[0].hold_ms",
            18,
            "unknown field `hold_ms`, expected one of `at_ms`, `duration_ms`, `probability`",
        ),
        (
            "kill",
            "nodes = [\"a-broker-1\"]\ndrift_ppm = 5\n",
            "faults.kill[0].drift_ppm",
            18,
            "unknown field `drift_ppm`, expected one of `at_ms`, `nodes`, `duration_ms`, \
             `lose_unflushed`",
        ),
        (
            "clock_skew",
            "nodes = [\"a-broker-1\"]\ndrift_ppm = 1000000\n",
            "faults.clock_skew[0].drift_ppm",
            18,
            "between -999999 and 999999",
        ),
    ];
    for (kind, body, field, line, words) in cases {
        let error = parse(&fault(kind, body)).unwrap_err();
        let text = error.to_string();
        assert_eq!(error.field, field, "{text}");
        assert_eq!(error.line, Some(line), "{text}");
        assert!(text.contains(words), "{text}");
    }
}

#[test]
fn every_shipped_scenario_reads_back_from_its_own_toml() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios"));
    let mut count = 0;
    let mut paths: Vec<std::path::PathBuf> = Vec::new();
    for directory in [root.to_path_buf(), root.join("regressions")] {
        for entry in std::fs::read_dir(&directory).expect("a scenarios directory") {
            paths.push(entry.expect("a directory entry").path());
        }
    }
    for path in paths {
        if path.extension().is_none_or(|ext| ext != "toml") {
            continue;
        }
        let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let text = scenario.to_toml().expect("serialises");
        let again = Scenario::parse(Path::new("again.toml"), &text)
            .unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()));
        assert_eq!(again, scenario, "{}:\n{text}", path.display());
        count += 1;
    }
    assert!(count >= 20, "only {count} scenarios");
}

#[test]
fn scenario_mirror_state_leaders_are_fault_targets() {
    let kill =
        |node: &str| format!("{TWO_CLUSTERS}[[faults.kill]]\nat_ms = 10\nnodes = [\"{node}\"]\n");
    assert!(parse(&kill("b-leader:__mirror_state:2")).is_ok());
    let error = parse(&kill("b-leader:__mirror_state:3")).unwrap_err();
    assert_eq!(error.field, "faults.kill[0].nodes[0]");
    assert!(parse(&kill("a-leader:__mirror_state:49")).is_ok());
}

/// A two-cluster scenario every refusal below changes in one place (`{…}` markers are
/// replaced); line numbers in the cases count from its first line.
const BASE: &str = r#"duration_ms = 5000
heal_ms = 10000
[[clusters]]
brokers = 3
[[clusters]]
brokers = 3
[[topics]]
cluster = "a"
name = "orders"
partitions = 2
replication_factor = 3
[[topics]]
cluster = "b"
name = "orders"
partitions = 2
replication_factor = 3
[[producers]]
cluster = "a"
topic = "orders"
[[consumers]]
cluster = "b"
topic = "orders"
[[admin.create_mirror]]
at_ms = 100
cluster = "b"
mirror = "m"
source = "a"
[[faults.kill]]
at_ms = 10
nodes = ["a-broker-1"]
"#;

/// BASE's scripted fault, for the cases that replace it with another.
const BASE_KILL: &str = "[[faults.kill]]
at_ms = 10
nodes = [\"a-broker-1\"]";

/// `BASE` with `from` replaced by `to` (which must be there).
fn base_with(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "{from:?} is not in BASE");
    BASE.replacen(from, to, 1)
}

/// Asserts that `text` is refused naming `field` at `line`, with `words` in the message.
#[track_caller]
fn assert_refused(text: &str, field: &str, line: usize, words: &str) {
    let error = match parse(text) {
        Ok(_) => panic!("accepted, expected a refusal of `{field}`:\n{text}"),
        Err(error) => error,
    };
    let shown = error.to_string();
    assert_eq!(error.field, field, "{shown}");
    assert_eq!(error.line, Some(line), "{shown}");
    assert!(
        shown.starts_with(&format!("test.toml:{line}: field `{field}`: ")),
        "{shown}"
    );
    assert!(shown.contains(words), "expected {words:?} in: {shown}");
    assert!(!shown.contains('\n'), "one line: {shown:?}");
}

#[test]
fn the_base_scenario_is_valid() {
    parse(BASE).unwrap();
}

#[test]
fn values_that_hung_or_panicked_a_run_are_refused() {
    // A producer interval that overflowed `next_send_ms += interval_ms` and looped forever.
    assert_refused(
        &base_with(
            "topic = \"orders\"\n[[consumers]]",
            "topic = \"orders\"\ninterval_ms = 9223372036854775806\n[[consumers]]",
        ),
        "producers[0].interval_ms",
        20,
        "between 1 and 604800000",
    );
    assert_refused(
        &base_with(
            "brokers = 3\n[[clusters]]",
            "brokers = 3\nallow_everyone_if_no_acl_found = true\n[[clusters]]",
        ),
        "clusters[0].allow_everyone_if_no_acl_found",
        5,
        "needs `authorizer = true`",
    );
    for timeout in ["0", "-5", "200", "9223372036854775807"] {
        assert_refused(
            &base_with(
                "brokers = 3\n[[clusters]]",
                &format!("brokers = 3\nbroker_session_timeout_ms = {timeout}\n[[clusters]]"),
            ),
            "clusters[0].broker_session_timeout_ms",
            5,
            "must be between 201 and 2147483647 ms",
        );
    }
    assert_refused(
        &base_with(
            "topic = \"orders\"\n[[admin.create_mirror]]",
            "topic = \"orders\"\ngroup = \"\"\n[[admin.create_mirror]]",
        ),
        "consumers[0].group",
        23,
        "empty group id",
    );
    // 256 or more clients of one kind on a cluster collided on the node address octet.
    assert_refused(
        &base_with(
            "[[producers]]\ncluster = \"a\"\ntopic = \"orders\"\n",
            "[[producers]]\ncluster = \"a\"\ntopic = \"orders\"\ncount = 200\n\
             [[producers]]\ncluster = \"a\"\ntopic = \"orders\"\ncount = 200\n",
        ),
        "producers[1].count",
        24,
        "at most 255 producer nodes",
    );
    assert_refused(
        &base_with(
            "topic = \"orders\"\n[[admin.create_mirror]]",
            "topic = \"orders\"\ncount = 0\n[[admin.create_mirror]]",
        ),
        "consumers[0].count",
        23,
        "at least 1",
    );
}

#[test]
fn set_up_failures_are_bad_input_refused_at_load() {
    assert_refused(
        &base_with(
            "cluster = \"b\"\nname = \"orders\"",
            "cluster = \"a\"\nname = \"orders\"",
        ),
        "topics[1].name",
        14,
        "declared twice on cluster `a` (first at topics[0])",
    );
    assert_refused(
        &base_with(
            "name = \"orders\"\npartitions = 2\nreplication_factor = 3\n[[topics]]\ncluster = \"b\"\nname = \"orders\"",
            "name = \"bill.eu\"\npartitions = 2\nreplication_factor = 3\n[[topics]]\ncluster = \"a\"\nname = \"bill_eu\"",
        ),
        "topics[1].name",
        14,
        "collides with \"bill.eu\" (Kafka treats `.` and `_` alike",
    );
    let long = "t".repeat(250);
    for (name, words) in [
        (".", "'.' is not allowed"),
        ("..", "'..' is not allowed"),
        (
            "or ders",
            "contains characters other than ASCII alphanumerics",
        ),
        (
            "or:ders",
            "contains characters other than ASCII alphanumerics",
        ),
        (
            "or\\u0000ders",
            "contains characters other than ASCII alphanumerics",
        ),
        ("", "the empty string is not allowed"),
        (
            long.as_str(),
            "250 characters, longer than the maximum of 249",
        ),
    ] {
        assert_refused(
            &base_with(
                "name = \"orders\"\npartitions = 2\nreplication_factor = 3\n[[topics]]",
                &format!("name = \"{name}\"\npartitions = 2\nreplication_factor = 3\n[[topics]]"),
            ),
            "topics[0].name",
            9,
            words,
        );
    }
    for internal in [
        "__mirror_state",
        "__consumer_offsets",
        "__transaction_state",
        "__cluster_metadata",
    ] {
        assert_refused(
            &base_with(
                "cluster = \"b\"\nname = \"orders\"",
                &format!("cluster = \"b\"\nname = \"{internal}\""),
            ),
            "topics[1].name",
            14,
            "internal topic the cluster creates itself",
        );
    }
    for lag in ["0", "-1", "9223372036854775807"] {
        assert_refused(
            &base_with(
                "brokers = 3\n[[topics]]",
                &format!("brokers = 3\nreplica_lag_time_max_ms = {lag}\n[[topics]]"),
            ),
            "clusters[1].replica_lag_time_max_ms",
            7,
            "must be between 1 and 2147483647 ms",
        );
    }
    for (bytes, message) in [
        ("0", "must be at least 1 byte"),
        ("-1", "invalid value"),
        ("5000000000", "invalid value"),
    ] {
        assert_refused(
            &base_with(
                "brokers = 3\n[[topics]]",
                &format!("brokers = 3\nreplica_fetch_max_bytes = {bytes}\n[[topics]]"),
            ),
            "clusters[1].replica_fetch_max_bytes",
            7,
            message,
        );
    }
}

#[test]
fn times_beyond_a_simulated_week_and_wrapping_numbers_are_refused() {
    for value in ["9223372036854775808", "18446744073709551615", "604800001"] {
        assert_refused(
            &base_with("duration_ms = 5000", &format!("duration_ms = {value}")),
            "duration_ms",
            1,
            "between 1 and 604800000 ms (a week)",
        );
        assert_refused(
            &base_with("heal_ms = 10000", &format!("heal_ms = {value}")),
            "heal_ms",
            2,
            "between 0 and 604800000 ms (a week)",
        );
    }
    assert_refused(
        &base_with("duration_ms = 5000", "duration_ms = 0"),
        "duration_ms",
        1,
        "between 1 and",
    );
    // `abs()` of i64::MIN wraps to itself and passed the old ±999999 check.
    assert_refused(
        &base_with(
            BASE_KILL,
            "[[faults.clock_skew]]\nat_ms = 10\nnodes = [\"a-broker-1\"]\n\
             drift_ppm = -9223372036854775808",
        ),
        "faults.clock_skew[0].drift_ppm",
        31,
        "between -999999 and 999999 ppm",
    );
    assert_refused(
        &base_with(
            "nodes = [\"a-broker-1\"]",
            "nodes = [\"a-broker-1\"]\nduration_ms = 18446744073709551615",
        ),
        "faults.kill[0].duration_ms",
        31,
        "between 1 and 604800000",
    );
    assert_refused(
        &base_with(
            "nodes = [\"a-broker-1\"]",
            "nodes = [\"a-broker-1\"]\nduration_ms = 0",
        ),
        "faults.kill[0].duration_ms",
        31,
        "between 1 and",
    );
}

#[test]
fn faults_that_would_never_act_or_keys_of_another_kind_are_refused() {
    assert_refused(
        &base_with("at_ms = 10\nnodes", "at_ms = 5000\nnodes"),
        "faults.kill[0].at_ms",
        29,
        "a later fault would never fire",
    );
    let kill_keys = "expected one of `at_ms`, `nodes`, `duration_ms`, `lose_unflushed`";
    for (extra, key) in [
        ("other = [\"a-broker-2\"]", "other"),
        ("asymmetric = true", "asymmetric"),
        ("asymmetric = false", "asymmetric"),
        ("amount = 3", "amount"),
        ("probability = 0.5", "probability"),
        ("jump_ms = 5", "jump_ms"),
    ] {
        assert_refused(
            &base_with(BASE_KILL, &format!("{BASE_KILL}\n{extra}")),
            &format!("faults.kill[0].{key}"),
            31,
            &format!("unknown field `{key}`, {kill_keys}"),
        );
    }
    let partition = "[[faults.partition]]\nat_ms = 10\nnodes = [\"a-broker-1\"]\n\
                     other = [\"a-broker-2\"]";
    assert_refused(
        &base_with(BASE_KILL, &format!("{partition}\nlose_unflushed = true")),
        "faults.partition[0].lose_unflushed",
        32,
        "unknown field `lose_unflushed`, expected one of `at_ms`, `nodes`, `other`, \
         `duration_ms`, `asymmetric`",
    );
    // A network-wide fault has no targets: `nodes` there would be silently ignored.
    assert_refused(
        &base_with(
            BASE_KILL,
            "[[faults.packet_loss]]\nat_ms = 10\nnodes = [\"a-broker-1\"]\nprobability = 0.1",
        ),
        "faults.packet_loss[0].nodes",
        30,
        "unknown field `nodes`, expected one of `at_ms`, `duration_ms`, `probability`",
    );
    // A clock skew lasts until the heal phase.
    let skew = "[[faults.clock_skew]]\nat_ms = 10\nnodes = [\"a-broker-1\"]";
    assert_refused(
        &base_with(
            BASE_KILL,
            &format!("{skew}\njump_ms = 50\nduration_ms = 100"),
        ),
        "faults.clock_skew[0].duration_ms",
        32,
        "unknown field `duration_ms`, expected one of `at_ms`, `nodes`, `jump_ms`, `drift_ppm`",
    );
    assert_refused(
        &base_with(BASE_KILL, skew),
        "faults.clock_skew[0].jump_ms",
        28,
        "`clock_skew` needs a forward jump (`jump_ms`) or a `drift_ppm`",
    );
    // Values that make a fault a no-op, a delay no heal phase survives, a jump back or an
    // unbounded one. (kind, key, value, words)
    for (kind, key, value, words) in [
        (
            "latency_spike",
            "extra_ms",
            "-5",
            "invalid value: integer `-5`, expected u64",
        ),
        (
            "latency_spike",
            "extra_ms",
            "nan",
            "invalid type: floating point `NaN`, expected u64",
        ),
        ("latency_spike", "extra_ms", "150.5", "expected u64"),
        (
            "latency_spike",
            "extra_ms",
            "0",
            "a delay in ms from 1 to the heal phase's 10000 ms",
        ),
        (
            "latency_spike",
            "extra_ms",
            "10000001",
            "would fail liveness by construction",
        ),
        ("hold_back", "hold_ms", "-1", "expected u64"),
        ("hold_back", "hold_ms", "0", "a delay in ms"),
        (
            "packet_loss",
            "probability",
            "0",
            "a probability in (0, 1] (0 never acts), not 0",
        ),
        (
            "packet_loss",
            "probability",
            "1.5",
            "a probability in (0, 1]",
        ),
        ("duplicate", "probability", "nan", "a probability in (0, 1]"),
        (
            "clock_skew",
            "jump_ms",
            "31536000001",
            "a clock jump in ms of at most a year",
        ),
        // A node has one clock, which its timers read: a step back would stall them all
        // (generated seed 2292223553896425), which Kafka's monotonic timers never see.
        (
            "clock_skew",
            "jump_ms",
            "-300",
            "invalid value: integer `-300`, expected u64",
        ),
    ] {
        let nodes = if kind == "clock_skew" {
            "\nnodes = [\"a-broker-1\"]"
        } else {
            ""
        };
        assert_refused(
            &base_with(
                BASE_KILL,
                &format!("[[faults.{kind}]]\nat_ms = 10{nodes}\n{key} = {value}"),
            ),
            &format!("faults.{kind}[0].{key}"),
            if nodes.is_empty() { 30 } else { 31 },
            words,
        );
    }
    for (kind, key) in [
        ("packet_loss", "probability"),
        ("latency_spike", "extra_ms"),
        ("duplicate", "probability"),
        ("hold_back", "hold_ms"),
    ] {
        assert_refused(
            &base_with(BASE_KILL, &format!("[[faults.{kind}]]\nat_ms = 10")),
            &format!("faults.{kind}[0].{key}"),
            28,
            &format!("missing field `{key}`"),
        );
    }
    assert_refused(
        &base_with(
            "brokers = 3\n[[clusters]]",
            "brokers = 3\nlog_flush_interval_ms = -10\n[[clusters]]",
        ),
        "clusters[0].log_flush_interval_ms",
        5,
        "must be between 1 and 2147483647 ms, not -10; leave it out to never flush",
    );
    // Swarm kinds without swarm mode choose nothing.
    assert_refused(
        &base_with(BASE_KILL, "[faults]\nswarm_kinds = [\"kill\"]"),
        "faults.swarm_kinds",
        29,
        "need `swarm = true`",
    );
    // Up to two impaired brokers, and only for a swarm.
    assert_refused(
        &base_with(
            BASE_KILL,
            "[faults]\nswarm = true\nswarm_impaired_brokers = 3",
        ),
        "faults.swarm_impaired_brokers",
        30,
        "must be 1 or 2, not 3",
    );
    assert_refused(
        &base_with(BASE_KILL, "[faults]\nswarm_impaired_brokers = 2"),
        "faults.swarm_impaired_brokers",
        29,
        "needs `swarm = true`",
    );
}

/// Every fault kind refuses a key only another kind takes, by name, at the key's line: the
/// kind's own table type has no such field.
#[test]
fn every_fault_kind_refuses_another_kinds_key_at_its_line() {
    // (kind, the keys it needs, a key of another kind)
    let nodes = "nodes = [\"a-broker-1\"]\n";
    for (kind, needs, foreign) in [
        ("kill", nodes, "asymmetric = true"),
        ("disk_tear", nodes, "lose_unflushed = true"),
        ("pause", nodes, "probability = 0.5"),
        (
            "partition",
            "nodes = [\"a-broker-1\"]\nother = [\"a-broker-2\"]\n",
            "hold_ms = 5",
        ),
        ("isolate", nodes, "other = [\"a-broker-2\"]"),
        ("packet_loss", "probability = 0.1\n", "extra_ms = 5"),
        ("latency_spike", "extra_ms = 50\n", "probability = 0.1"),
        ("duplicate", "probability = 0.1\n", "drift_ppm = 5"),
        ("hold_back", "hold_ms = 50\n", "jump_ms = 5"),
        (
            "clock_skew",
            "nodes = [\"a-broker-1\"]\njump_ms = 5\n",
            "lose_unflushed = true",
        ),
    ] {
        let text = base_with(
            BASE_KILL,
            &format!("[[faults.{kind}]]\nat_ms = 10\n{needs}{foreign}"),
        );
        parse(&text.replace(foreign, "")).unwrap_or_else(|e| panic!("{kind} without it: {e}"));
        let key = foreign.split(' ').next().unwrap_or_default();
        let line = 29 + needs.lines().count() + 1;
        assert_refused(
            &text,
            &format!("faults.{kind}[0].{key}"),
            line,
            &format!("unknown field `{key}`, expected "),
        );
    }
}

/// An admin operation refuses a key only another operation takes, by name, at its line.
#[test]
fn every_admin_operation_refuses_another_operations_key_at_its_line() {
    let mirror = "mirror = \"m\"\n";
    let topics = "topics = [\"orders\"]\n";
    // (operation, the keys it needs besides at_ms and cluster, a key of another operation)
    for (op, needs, foreign) in [
        (
            "create_mirror",
            "mirror = \"n\"\nsource = \"a\"\n",
            "partitions = 3",
        ),
        (
            "add_topics",
            "mirror = \"m\"\ntopics = [\"orders\"]\n",
            "source = \"a\"",
        ),
        (
            "remove_topics",
            "mirror = \"m\"\ntopics = [\"orders\"]\n",
            "configs = {}",
        ),
        (
            "pause_topics",
            "mirror = \"m\"\ntopics = [\"orders\"]\n",
            "partitions = 3",
        ),
        (
            "resume_topics",
            "mirror = \"m\"\ntopics = [\"orders\"]\n",
            "source = \"a\"",
        ),
        ("delete_mirror", mirror, "topics = [\"orders\"]"),
        ("describe_mirror", mirror, "partitions = 3"),
        ("delete_records", topics, "mirror = \"m\""),
        ("delete_topics", topics, "source = \"a\""),
        (
            "create_partitions",
            "topics = [\"orders\"]\npartitions = 3\n",
            "mirror = \"m\"",
        ),
    ] {
        let with = |extra: &str| {
            base_with(
                "source = \"a\"\n",
                &format!(
                    "source = \"a\"\n[[admin.{op}]]\nat_ms = 200\ncluster = \"b\"\n{needs}{extra}\n"
                ),
            )
        };
        parse(&with("")).unwrap_or_else(|e| panic!("{op} without it: {e}"));
        let text = with(foreign);
        let key = foreign.split(' ').next().unwrap_or_default();
        let line = 30 + needs.lines().count() + 1;
        // BASE has a `create_mirror` of its own.
        let index = usize::from(op == "create_mirror");
        assert_refused(
            &text,
            &format!("admin.{op}[{index}].{key}"),
            line,
            &format!("unknown field `{key}`, expected "),
        );
    }
}

/// Faults and admin operations of several kinds keep their file order in memory and back
/// through `to_toml`, which writes them interleaved as they were; field paths count per kind.
#[test]
fn entries_of_every_kind_keep_their_file_order_and_read_back_in_it() {
    let text = base_with(
        BASE_KILL,
        &format!(
            "[[faults.pause]]\nat_ms = 10\nnodes = [\"a-broker-2\"]\n\
             {BASE_KILL}\n\
             [[faults.packet_loss]]\nat_ms = 10\nprobability = 0.1\n\
             [[faults.kill]]\nat_ms = 5\nnodes = [\"a-broker-3\"]\n\
             [[admin.describe_mirror]]\nat_ms = 100\ncluster = \"b\"\nmirror = \"m\""
        ),
    );
    let scenario = parse(&text).unwrap();
    let kinds: Vec<&str> = scenario
        .faults
        .scripted
        .iter()
        .map(ScriptedFault::kind)
        .collect();
    assert_eq!(kinds, ["pause", "kill", "packet_loss", "kill"]);
    let ops: Vec<AdminOpKind> = scenario.admin.iter().map(AdminOpSpec::kind).collect();
    assert_eq!(
        ops,
        [AdminOpKind::CreateMirror, AdminOpKind::DescribeMirror]
    );
    let written = scenario.to_toml().unwrap();
    let headers: Vec<&str> = written
        .lines()
        .filter(|line| line.starts_with("[[faults.") || line.starts_with("[[admin."))
        .collect();
    assert_eq!(
        headers,
        [
            "[[faults.pause]]",
            "[[faults.kill]]",
            "[[faults.packet_loss]]",
            "[[faults.kill]]",
            "[[admin.create_mirror]]",
            "[[admin.describe_mirror]]"
        ],
        "{written}"
    );
    assert_eq!(parse(&written).unwrap(), scenario);
    // The second kill is `faults.kill[1]`, whatever lies between.
    assert_refused(
        &text.replace("a-broker-3", "a-broker-9"),
        "faults.kill[1].nodes[0]",
        39,
        "cluster `a` has brokers 1..=3",
    );
    // With swarm settings, `[faults]` is written before the entries that extend it.
    let mut swarm = scenario.clone();
    swarm.faults.swarm = true;
    assert_eq!(parse(&swarm.to_toml().unwrap()).unwrap(), swarm);
}

/// The format before typed tables (`[[faults.scripted]]` with a `kind`, `[[admin]]` with an
/// `op`) is refused with what is expected instead.
#[test]
fn the_untyped_format_is_refused_naming_the_typed_one() {
    assert_refused(
        &base_with(
            BASE_KILL,
            "[[faults.scripted]]\nat_ms = 10\nkind = \"kill\"\nnodes = [\"a-broker-1\"]",
        ),
        "faults.scripted[0]",
        28,
        "unknown field `scripted`, expected one of `swarm`, `swarm_kinds`, `swarm_impaired_brokers`, `kill`, `pause`",
    );
    assert_refused(
        &base_with(
            "[[admin.create_mirror]]\nat_ms = 100\ncluster = \"b\"\n",
            "[[admin]]\nat_ms = 100\ncluster = \"b\"\nop = \"create_mirror\"\n",
        ),
        "admin[0]",
        23,
        "invalid type: sequence, expected a table of admin operations by operation, e.g. \
         `[[admin.create_mirror]]`",
    );
}

#[test]
fn names_kafka_refuses_or_that_would_forge_output_are_refused() {
    let long = "m".repeat(5000);
    for (name, words) in [
        ("", "the empty string is not allowed"),
        (
            "mi\\u0000rror",
            "contains characters other than ASCII alphanumerics",
        ),
        (
            "m.paused",
            "ends in `.paused`, which `mirror.name` uses for a desired state",
        ),
        ("m.removed", "ends in `.removed`"),
        (
            long.as_str(),
            "5000 characters, longer than the maximum of 249",
        ),
    ] {
        assert_refused(
            &base_with("mirror = \"m\"", &format!("mirror = \"{name}\"")),
            "admin.create_mirror[0].mirror",
            26,
            words,
        );
        assert!(parse(&base_with(
            "mirror = \"m\"",
            &format!("mirror = \"{name}\"")
        ))
        .unwrap_err()
        .message
        .starts_with("invalid mirror name: "));
    }
    for (node, words) in [
        ("a-broker-+1", "bad broker id \"+1\""),
        ("a-broker-01", "bad broker id \"01\""),
        ("a-broker- 1", "bad broker id"),
        ("a-producer-01", "bad client index"),
        ("a-leader:orders:01", "bad partition"),
        ("a-follower:orders:01", "bad partition"),
        ("a-follower:orders", "use `a-follower:TOPIC:PARTITION`"),
        ("a-follower:nothing:0", "no such topic partition"),
        ("a-leader:orders:+0", "bad partition"),
        ("a-replica:orders:0", "position in the assignment is 1..=3"),
        (
            "a-replica:orders:0:0",
            "position in the assignment is 1..=3",
        ),
        (
            "a-replica:orders:0:4",
            "position in the assignment is 1..=3",
        ),
        (
            "a-replica:orders:0:02",
            "position in the assignment is 1..=3",
        ),
        ("a-replica:orders:01:2", "bad partition"),
        ("a-replica:nothing:0:2", "no such topic partition"),
        ("a-replica:orders", "use `a-replica:TOPIC:PARTITION:N`"),
    ] {
        assert_refused(
            &base_with("nodes = [\"a-broker-1\"]", &format!("nodes = [\"{node}\"]")),
            "faults.kill[0].nodes[0]",
            30,
            words,
        );
    }
    // A newline in the scenario's name could print a forged `VIOLATION` line.
    assert_refused(
        &format!("name = \"x\\nVIOLATION invariant=liveness\"\n{BASE}"),
        "name",
        1,
        "scenario names follow Kafka's topic-name rules",
    );
    assert_refused(
        &base_with(
            "source = \"a\"",
            "source = \"a\"\nconfigs = { \"mirror.topics.include\" = \"o\\n\" }",
        ),
        "admin.create_mirror[0].configs.\"mirror.topics.include\"",
        28,
        "control character '\\n'",
    );
    assert_refused(
        &format!("coverage = [\"leader-elected\", \"x\\ry\"]\n{BASE}"),
        "coverage[1]",
        1,
        "control character '\\r'",
    );
    // A name from the file stem is made printable.
    let scenario = Scenario::parse(Path::new("dir/my scenario\n.toml"), BASE).unwrap();
    assert_eq!(scenario.name, "my_scenario_");
}

#[test]
fn errors_name_the_entry_of_an_array_and_the_field_not_the_value() {
    // The second and later entries of an array of tables get their own lines.
    assert_refused(
        &base_with(
            "partitions = 2\nreplication_factor = 3\n[[producers]]",
            "partitions = 99\nreplication_factor = 3\n[[producers]]",
        ),
        "topics[1].partitions",
        15,
        "must be between 1 and 64",
    );
    let three_faults = base_with(
        "nodes = [\"a-broker-1\"]\n",
        "nodes = [\"a-broker-1\"]\n[[faults.pause]]\nat_ms = 20\n\
         nodes = [\"a-broker-2\"]\n[[faults.kill]]\nat_ms = 30\nnodes = [\"a-broker-0\"]\n",
    );
    assert_refused(
        &three_faults,
        "faults.kill[1].nodes[0]",
        36,
        "cluster `a` has brokers 1..=3",
    );
    // Type and range errors of serde name the field.
    assert_refused(
        &base_with("brokers = 3\n[[topics]]", "brokers = 256\n[[topics]]"),
        "clusters[1].brokers",
        6,
        "invalid value: integer `256`, expected u8",
    );
    assert_refused(
        &base_with(
            "partitions = 2\nreplication_factor = 3\n[[producers]]",
            "partitions = \"two\"\nreplication_factor = 3\n[[producers]]",
        ),
        "topics[1].partitions",
        15,
        "invalid type: string \"two\", expected i32",
    );
    assert_refused(
        &base_with("at_ms = 100", "at_ms = -1"),
        "admin.create_mirror[0].at_ms",
        24,
        "expected u64",
    );
    // Syntax errors name the table and key of their line, never `-`, `=` or `#`.
    assert_refused(
        &base_with("brokers = 3\n[[topics]]", "brokers = = 3\n[[topics]]"),
        "clusters[1].brokers",
        6,
        "TOML syntax",
    );
    assert_refused(
        &base_with(
            "partitions = 2\nreplication_factor = 3\n[[producers]]",
            "partitions = -\nreplication_factor = 3\n[[producers]]",
        ),
        "topics[1].partitions",
        15,
        "TOML syntax",
    );
    assert_refused(
        &base_with(
            "at_ms = 100\n",
            "at_ms = 100 # ok\n# a comment\nat_ms = 3\n",
        ),
        "admin.create_mirror[0].at_ms",
        26,
        "TOML syntax: duplicate key",
    );
    // Missing keys point at their table; too many clusters at the 27th.
    assert_refused(
        &base_with(
            BASE_KILL,
            "[[faults.partition]]\nat_ms = 10\nnodes = [\"a-broker-1\"]",
        ),
        "faults.partition[0].other",
        28,
        "missing field `other`",
    );
    let many = base_with(
        "[[clusters]]\nbrokers = 3\n[[clusters]]\nbrokers = 3\n",
        &"[[clusters]]\nbrokers = 1\n".repeat(27),
    );
    assert_refused(
        &many,
        "clusters[26]",
        55,
        "at most 26 clusters (`a` to `z`), this file has 27",
    );
    assert_refused(
        &base_with(
            "partitions = 2\nreplication_factor = 3\n[[producers]]",
            "replication_factor = 3\n[[producers]]",
        ),
        "topics[1].partitions",
        12,
        "missing field `partitions`",
    );
    assert_refused(
        &base_with("name = \"orders\"\npartitions = 2\n", "name = \"orders\"\n"),
        "topics[0].partitions",
        7,
        "missing field `partitions`",
    );
    assert_refused(
        &base_with("duration_ms = 5000\n", ""),
        "duration_ms",
        1,
        "missing field `duration_ms`",
    );
}

/// The keys a table type takes, in declaration order, read off the call serde's derive makes.
fn keys_of<T: serde::de::DeserializeOwned>() -> Vec<&'static str> {
    /// The "error" that carries the keys out.
    #[derive(Debug)]
    struct Keys(Vec<&'static str>);
    impl std::fmt::Display for Keys {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{:?}", self.0)
        }
    }
    impl std::error::Error for Keys {}
    impl serde::de::Error for Keys {
        fn custom<M: std::fmt::Display>(_: M) -> Self {
            Keys(Vec::new())
        }
    }
    struct Lister;
    impl<'de> serde::Deserializer<'de> for Lister {
        type Error = Keys;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Keys> {
            Err(Keys(Vec::new()))
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Keys> {
            Err(Keys(fields.to_vec()))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    match T::deserialize(Lister) {
        Err(Keys(keys)) => keys,
        Ok(_) => Vec::new(),
    }
}

/// The keys the README's table headed `heading` documents for `name`: the backquoted names
/// of the row's second cell.
fn documented_keys<'a>(readme: &'a str, heading: &str, name: &str) -> Vec<&'a str> {
    let (_, table) = readme
        .split_once(heading)
        .unwrap_or_else(|| panic!("no README table headed {heading:?}"));
    // The rest of the heading's line, then the rows.
    let row = table
        .lines()
        .skip(1)
        .take_while(|line| line.starts_with('|'))
        .find(|line| line.starts_with(&format!("| `{name}` |")))
        .unwrap_or_else(|| panic!("no README row for `{name}`"));
    let cell = row.split('|').nth(2).unwrap_or_default();
    cell.split('`').skip(1).step_by(2).collect()
}

#[test]
fn the_readme_key_tables_are_the_loaders() {
    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/README.md"
    ))
    .expect("scenarios/README.md");
    let faults = [
        ("kill", keys_of::<KillFault>()),
        ("pause", keys_of::<NodeFault>()),
        ("partition", keys_of::<PartitionFault>()),
        ("isolate", keys_of::<NodeFault>()),
        ("packet_loss", keys_of::<ProbabilityFault>()),
        ("latency_spike", keys_of::<LatencySpikeFault>()),
        ("duplicate", keys_of::<ProbabilityFault>()),
        ("hold_back", keys_of::<HoldBackFault>()),
        ("clock_skew", keys_of::<ClockSkewFault>()),
        ("disk_tear", keys_of::<NodeFault>()),
    ];
    let kinds: Vec<&str> = faults.iter().map(|(kind, _)| *kind).collect();
    assert_eq!(kinds, FAULT_KINDS);
    for (kind, keys) in faults {
        assert!(keys.starts_with(&["at_ms"]), "{kind}: {keys:?}");
        assert_eq!(
            documented_keys(&readme, "| kind | keys |", kind),
            keys,
            "README row for `{kind}`"
        );
    }
    let admin = [
        (AdminOpKind::CreateMirror, keys_of::<CreateMirrorOp>()),
        (AdminOpKind::AlterMirror, keys_of::<AlterMirrorOp>()),
        (AdminOpKind::AddTopics, keys_of::<AddTopicsOp>()),
        (AdminOpKind::RemoveTopics, keys_of::<MirrorTopicsOp>()),
        (AdminOpKind::PauseTopics, keys_of::<MirrorTopicsOp>()),
        (AdminOpKind::ResumeTopics, keys_of::<MirrorTopicsOp>()),
        (AdminOpKind::RecoverTopics, keys_of::<MirrorTopicsOp>()),
        (AdminOpKind::DeleteMirror, keys_of::<MirrorOp>()),
        (AdminOpKind::DescribeMirror, keys_of::<MirrorOp>()),
        (AdminOpKind::DeleteRecords, keys_of::<TopicsOp>()),
        (AdminOpKind::DeleteTopics, keys_of::<TopicsOp>()),
        (
            AdminOpKind::CreatePartitions,
            keys_of::<CreatePartitionsOp>(),
        ),
        (AdminOpKind::CreateTopics, keys_of::<TopicsOp>()),
        (AdminOpKind::AlterTopicConfigs, keys_of::<TopicConfigsOp>()),
        (AdminOpKind::CreateAcls, keys_of::<AclsOp>()),
        (AdminOpKind::DeleteAcls, keys_of::<AclsOp>()),
    ];
    let ops: Vec<AdminOpKind> = admin.iter().map(|(op, _)| *op).collect();
    assert_eq!(ops, AdminOpKind::ALL);
    for (op, keys) in admin {
        assert!(keys.starts_with(&["at_ms", "cluster"]), "{op:?}: {keys:?}");
        assert_eq!(
            documented_keys(&readme, "| operation | keys |", op.name()),
            keys,
            "README row for `{}`",
            op.name()
        );
    }
}

/// The tables `[faults]` and `admin` take are exactly the kinds' and operations' names, in
/// the order the names are listed (`FAULT_KINDS`, `AdminOpKind::ALL`).
#[test]
fn the_file_tables_are_named_by_the_kinds_and_operations() {
    let quoted = |names: &mut dyn Iterator<Item = &str>| -> String {
        names
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let error = parse(&base_with(BASE_KILL, "[[faults.nope]]\nat_ms = 1")).unwrap_err();
    let kinds = quoted(&mut FAULT_KINDS.iter().copied());
    assert_eq!(
        error.message,
        format!("unknown field `nope`, expected one of `swarm`, `swarm_kinds`, `swarm_impaired_brokers`, {kinds}")
    );
    let error = parse(&base_with(
        "[[admin.create_mirror]]",
        "[[admin.nope]]\n[[admin.create_mirror]]",
    ))
    .unwrap_err();
    let ops = quoted(&mut AdminOpKind::ALL.iter().map(|op| op.name()));
    assert_eq!(
        error.message,
        format!("unknown field `nope`, expected one of {ops}")
    );
}

#[test]
fn an_error_message_echoing_a_value_with_a_newline_stays_on_one_line() {
    // TOML's own message for a bad enum value repeats the value.
    let text = base_with(
        "topic = \"orders\"\n[[admin.create_mirror]]",
        "topic = \"orders\"\nisolation = \"x\\nVIOLATION invariant=liveness\"\n[[admin.create_mirror]]",
    );
    let error = parse(&text).unwrap_err();
    assert_eq!(error.field, "consumers[0].isolation");
    let shown = error.to_string();
    assert!(!shown.contains('\n'), "{shown:?}");
    assert!(shown.contains("x\\nVIOLATION"), "{shown}");
}
