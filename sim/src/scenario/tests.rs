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
}

#[test]
fn scenario_fault_targets_are_checked() {
    let text = format!(
        "{MINIMAL}\n[[faults.scripted]]\nat_ms = 10\nkind = \"kill\"\nnodes = [\"a-broker-4\"]\n"
    );
    let error = parse(&text).unwrap_err();
    assert_eq!(error.field, "faults.scripted[0].nodes[0]");
    assert_eq!(error.line, Some(18));
    let text = format!("{MINIMAL}\n[[faults.scripted]]\nat_ms = 10\nkind = \"explode\"\nnodes = [\"a-broker-1\"]\n");
    assert_eq!(parse(&text).unwrap_err().field, "faults.scripted[0].kind");
    let text = format!("{MINIMAL}\n[[faults.scripted]]\nat_ms = 10\nkind = \"kill\"\nnodes = [\"a-leader:orders:1\"]\n");
    assert!(parse(&text).is_ok());
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
        "{TWO_CLUSTERS}[[admin]]\nat_ms = 0\ncluster = \"b\"\nop = \"create_mirror\"\n\
         mirror = \"m\"\nsource = \"a\"\n\
         [[admin]]\nat_ms = 0\ncluster = \"b\"\nop = \"add_topics\"\nmirror = \"m\"\n\
         topics = [\"orders\"]\n\
         [[admin]]\nat_ms = 10\ncluster = \"b\"\nop = \"delete_mirror\"\nmirror = \"m\"\n"
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
    let entry = |body: &str| format!("[[admin]]\nat_ms = 100\ncluster = \"b\"\n{body}");
    // (body after at_ms and cluster, field, line, words of the message)
    let cases = [
        (
            "op = \"explode\"\nmirror = \"m\"\n",
            "admin[0].op",
            16,
            "unknown admin op \"explode\"",
        ),
        (
            "op = \"create_mirror\"\nmirror = \"m\"\n",
            "admin[0].source",
            13,
            "needs the source cluster",
        ),
        (
            "op = \"create_mirror\"\nmirror = \"m\"\nsource = \"b\"\n",
            "admin[0].source",
            18,
            "must differ from the destination cluster `b`",
        ),
        (
            "op = \"create_mirror\"\nmirror = \"m\"\nsource = \"c\"\n",
            "admin[0].source",
            18,
            "unknown cluster \"c\"",
        ),
        (
            "op = \"create_mirror\"\nmirror = \"m\"\nsource = \"a\"\n\
             configs = { \"bootstrap.servers\" = \"x\" }\n",
            "admin[0].configs.\"bootstrap.servers\"",
            19,
            "comes from `source`",
        ),
        (
            "op = \"create_mirror\"\nmirror = \"m\"\nsource = \"a\"\ntopics = [\"orders\"]\n",
            "admin[0].topics[0]",
            19,
            "`create_mirror` takes no topics",
        ),
        (
            "op = \"add_topics\"\nmirror = \"m\"\ntopics = [\"orders\", \"payments\"]\n",
            "admin[0].topics[1]",
            18,
            "topic \"payments\" is not declared on cluster `b`",
        ),
        (
            "op = \"pause_topics\"\nmirror = \"m\"\ntopics = [\"orders\", \"orders\"]\n",
            "admin[0].topics[1]",
            18,
            "listed twice",
        ),
        (
            "op = \"remove_topics\"\nmirror = \"m\"\n",
            "admin[0].topics",
            13,
            "`remove_topics` needs topics",
        ),
        (
            "op = \"delete_mirror\"\nmirror = \"m\"\nsource = \"a\"\n",
            "admin[0].source",
            18,
            "only `create_mirror` takes a source",
        ),
        (
            "op = \"delete_mirror\"\nmirror = \"m\"\nconfigs = { \"k\" = \"v\" }\n",
            "admin[0].configs",
            18,
            "only `create_mirror` takes configs",
        ),
    ];
    for (body, field, line, words) in cases {
        let (error_field, error_line, text) = error_of(&entry(body));
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
/// so the loader panicked ("validated by Scenario::load") instead of refusing the file.
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
[[admin]]
at_ms = 0
cluster = "b"
op = ""
mirror = "m"
source = "a"
"#;
    assert_refused(
        text,
        "admin[0].op",
        12,
        "unknown admin op \"\" (known: create_mirror",
    );
    // A fault target's topic check reads them too.
    let text = text.replace(
        "[[producers]]\ncluster = \"a\"\ntopic = \"orders\"\n",
        "[[faults.scripted]]\nat_ms = 10\nkind = \"kill\"\nnodes = [\"b-leader:orders:0\"]\n",
    );
    assert_refused(&text, "admin[0].op", 13, "unknown admin op \"\"");
}

#[test]
fn scenario_admin_cluster_and_times_are_checked() {
    let (field, line, _) =
        error_of("[[admin]]\nat_ms = 0\ncluster = \"c\"\nop = \"delete_mirror\"\nmirror = \"m\"\n");
    assert_eq!((field.as_str(), line), ("admin[0].cluster", Some(15)));
    let (field, line, text) = error_of(
        "[[admin]]\nat_ms = 5000\ncluster = \"b\"\nop = \"delete_mirror\"\nmirror = \"m\"\n",
    );
    assert_eq!((field.as_str(), line), ("admin[0].at_ms", Some(14)));
    assert!(text.contains("duration_ms = 5000"), "{text}");
    // A cluster's operations run in file order; another cluster's times are independent.
    let two = |first: &str, second: &str| {
        format!(
            "[[admin]]\nat_ms = 200\ncluster = \"b\"\nop = \"delete_mirror\"\nmirror = \"m\"\n\
             [[admin]]\nat_ms = 100\ncluster = \"{first}\"\nop = \"delete_mirror\"\nmirror = \"{second}\"\n"
        )
    };
    let (field, line, text) = error_of(&two("b", "m"));
    assert_eq!(
        (field.as_str(), line),
        ("admin[1].at_ms", Some(19)),
        "{text}"
    );
    assert!(text.contains("previous admin op (at_ms = 200)"), "{text}");
    assert!(parse(&format!("{TWO_CLUSTERS}{}", two("a", "m"))).is_ok());
    // A mirror operation needs the mirror; a topic operation takes none, and only
    // create_partitions takes (and needs) a partition count.
    let (field, _, _) = error_of("[[admin]]\nat_ms = 0\ncluster = \"b\"\nop = \"delete_mirror\"\n");
    assert_eq!(field, "admin[0].mirror");
    let topic_op = |extra: &str| {
        format!("[[admin]]\nat_ms = 0\ncluster = \"b\"\ntopics = [\"orders\"]\n{extra}")
    };
    for (extra, expected) in [
        (
            "op = \"delete_topics\"\nmirror = \"m\"\n",
            "admin[0].mirror",
        ),
        ("op = \"create_partitions\"\n", "admin[0].partitions"),
        (
            "op = \"create_partitions\"\npartitions = 0\n",
            "admin[0].partitions",
        ),
        (
            "op = \"delete_records\"\npartitions = 3\n",
            "admin[0].partitions",
        ),
    ] {
        let (field, _, text) = error_of(&topic_op(extra));
        assert_eq!(field, expected, "{extra}: {text}");
    }
    for extra in [
        "op = \"delete_topics\"\n",
        "op = \"delete_records\"\n",
        "op = \"create_partitions\"\npartitions = 4\n",
    ] {
        assert!(
            parse(&format!("{TWO_CLUSTERS}{}", topic_op(extra))).is_ok(),
            "{extra}"
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
    let fault = |body: &str| format!("{MINIMAL}\n[[faults.scripted]]\nat_ms = 10\n{body}");
    // A slow clock (a negative drift) still moves forward, so it is allowed.
    let scenario = parse(&fault(
        "kind = \"hold_back\"\nnodes = [\"a-broker-1\"]\namount = 900\nprobability = 0.25\n\
         [[faults.scripted]]\nat_ms = 20\nkind = \"clock_skew\"\nnodes = [\"a-broker-2\"]\n\
         amount = 300\ndrift_ppm = -1500\n",
    ))
    .unwrap();
    let [hold, skew] = &scenario.faults.scripted[..] else {
        panic!("two faults")
    };
    assert_eq!(hold.probability.as_ref().map(|p| *p.get_ref()), Some(0.25));
    assert_eq!(skew.drift_ppm.as_ref().map(|d| *d.get_ref()), Some(-1500));
    // (fault body, field, line of the offending value, words of the message); the fault
    // starts on line 15, its kind is on line 17.
    let cases = [
        (
            "kind = \"hold_back\"\namount = 500\nprobability = 1.5\n",
            "faults.scripted[0].probability",
            19,
            "a probability in (0, 1]",
        ),
        (
            "kind = \"packet_loss\"\namount = 0.1\nprobability = 0.5\n",
            "faults.scripted[0].probability",
            19,
            "`packet_loss` takes no `probability` (only hold_back takes it)",
        ),
        (
            "kind = \"kill\"\nnodes = [\"a-broker-1\"]\ndrift_ppm = 5\n",
            "faults.scripted[0].drift_ppm",
            19,
            "`kill` takes no `drift_ppm` (only clock_skew takes it)",
        ),
        (
            "kind = \"clock_skew\"\nnodes = [\"a-broker-1\"]\ndrift_ppm = 1000000\n",
            "faults.scripted[0].drift_ppm",
            19,
            "between -999999 and 999999",
        ),
    ];
    for (body, field, line, words) in cases {
        let error = parse(&fault(body)).unwrap_err();
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
    let kill = |node: &str| {
        format!(
            "{TWO_CLUSTERS}[[faults.scripted]]\nat_ms = 10\nkind = \"kill\"\nnodes = [\"{node}\"]\n"
        )
    };
    assert!(parse(&kill("b-leader:__mirror_state:2")).is_ok());
    let error = parse(&kill("b-leader:__mirror_state:3")).unwrap_err();
    assert_eq!(error.field, "faults.scripted[0].nodes[0]");
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
[[admin]]
at_ms = 100
cluster = "b"
op = "create_mirror"
mirror = "m"
source = "a"
[[faults.scripted]]
at_ms = 10
kind = "kill"
nodes = ["a-broker-1"]
"#;

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
            "topic = \"orders\"\n[[admin]]",
            "topic = \"orders\"\ngroup = \"\"\n[[admin]]",
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
            "topic = \"orders\"\n[[admin]]",
            "topic = \"orders\"\ncount = 0\n[[admin]]",
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
            "kind = \"kill\"\nnodes = [\"a-broker-1\"]",
            "kind = \"clock_skew\"\nnodes = [\"a-broker-1\"]\ndrift_ppm = -9223372036854775808",
        ),
        "faults.scripted[0].drift_ppm",
        33,
        "between -999999 and 999999 ppm",
    );
    assert_refused(
        &base_with(
            "nodes = [\"a-broker-1\"]",
            "nodes = [\"a-broker-1\"]\nduration_ms = 18446744073709551615",
        ),
        "faults.scripted[0].duration_ms",
        33,
        "between 1 and 604800000",
    );
    assert_refused(
        &base_with(
            "nodes = [\"a-broker-1\"]",
            "nodes = [\"a-broker-1\"]\nduration_ms = 0",
        ),
        "faults.scripted[0].duration_ms",
        33,
        "between 1 and",
    );
}

#[test]
fn faults_that_would_never_act_or_keys_they_ignore_are_refused() {
    assert_refused(
        &base_with("at_ms = 10\nkind", "at_ms = 5000\nkind"),
        "faults.scripted[0].at_ms",
        30,
        "a later fault would never fire",
    );
    let kill = "kind = \"kill\"\nnodes = [\"a-broker-1\"]";
    for (extra, key, words) in [
        ("other = [\"a-broker-2\"]", "other", "`kill` takes no `other` (only partition takes it)"),
        ("asymmetric = true", "asymmetric", "`kill` takes no `asymmetric` (only partition takes it)"),
        ("asymmetric = false", "asymmetric", "`kill` takes no `asymmetric`"),
        ("amount = 3", "amount", "`kill` takes no `amount` (only packet_loss, latency_spike, duplicate, hold_back, clock_skew take it)"),
        ("probability = 0.5", "probability", "only hold_back takes it"),
    ] {
        assert_refused(
            &base_with(kill, &format!("{kill}\n{extra}")),
            &format!("faults.scripted[0].{key}"),
            33,
            words,
        );
    }
    let partition = "kind = \"partition\"\nnodes = [\"a-broker-1\"]\nother = [\"a-broker-2\"]";
    assert_refused(
        &base_with(kill, &format!("{partition}\nlose_unflushed = true")),
        "faults.scripted[0].lose_unflushed",
        34,
        "`partition` takes no `lose_unflushed` (only kill takes it)",
    );
    // A network-wide fault has no targets: `nodes` there was silently ignored.
    assert_refused(
        &base_with(kill, "kind = \"packet_loss\"\nnodes = [\"a-broker-1\"]\namount = 0.1"),
        "faults.scripted[0].nodes",
        32,
        "`packet_loss` takes no `nodes` (only kill, disk_tear, pause, partition, isolate, hold_back, clock_skew take it)",
    );
    // A clock skew lasts until the heal phase.
    assert_refused(
        &base_with(
            kill,
            "kind = \"clock_skew\"\nnodes = [\"a-broker-1\"]\namount = 50\nduration_ms = 100",
        ),
        "faults.scripted[0].duration_ms",
        34,
        "`clock_skew` takes no `duration_ms`",
    );
    assert_refused(
        &base_with(kill, "kind = \"clock_skew\"\nnodes = [\"a-broker-1\"]"),
        "faults.scripted[0].amount",
        29,
        "needs an offset (`amount`, ms) or a `drift_ppm`",
    );
    // Amounts that make a fault a no-op, or a delay no heal phase survives.
    for (kind, amount, words) in [
        (
            "latency_spike",
            "-5",
            "a delay in ms from 1 to the heal phase's 10000 ms",
        ),
        ("latency_spike", "nan", "not NaN"),
        ("latency_spike", "1e300", "a delay in ms"),
        ("latency_spike", "inf", "not inf"),
        (
            "latency_spike",
            "1e7",
            "would fail liveness by construction",
        ),
        ("hold_back", "-1", "a delay in ms"),
        ("hold_back", "0.5", "a delay in ms"),
        (
            "packet_loss",
            "0",
            "a probability in (0, 1] (0 never acts), not 0",
        ),
        ("packet_loss", "1.5", "a probability in (0, 1]"),
        ("duplicate", "nan", "a probability in (0, 1]"),
        ("clock_skew", "inf", "a clock jump in ms of at most a year"),
        ("clock_skew", "nan", "a clock jump in ms of at most a year"),
        // A node has one clock, which its timers read: a step back would stall them all
        // (generated seed 2292223553896425), which Kafka's monotonic timers never see.
        (
            "clock_skew",
            "-300",
            "a clock only jumps forward, not by -300 ms: the model gives a node one clock",
        ),
        ("clock_skew", "-1e300", "a clock only jumps forward"),
        (
            "clock_skew",
            "-inf",
            "Kafka's timers (on the monotonic clock) never see it step back",
        ),
    ] {
        let nodes = if kind == "clock_skew" {
            "\nnodes = [\"a-broker-1\"]"
        } else {
            ""
        };
        assert_refused(
            &base_with(
                kill,
                &format!("kind = \"{kind}\"{nodes}\namount = {amount}"),
            ),
            "faults.scripted[0].amount",
            if nodes.is_empty() { 32 } else { 33 },
            words,
        );
    }
    for kind in ["packet_loss", "latency_spike", "duplicate", "hold_back"] {
        assert_refused(
            &base_with(kill, &format!("kind = \"{kind}\"")),
            "faults.scripted[0].amount",
            29,
            &format!("`{kind}` needs `amount`"),
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
        &format!("{BASE}[faults]\nswarm_kinds = [\"kill\"]\n").replace(
            "[[faults.scripted]]\nat_ms = 10\nkind = \"kill\"\nnodes = [\"a-broker-1\"]\n",
            "",
        ),
        "faults.swarm_kinds",
        30,
        "need `swarm = true`",
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
            "admin[0].mirror",
            27,
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
        ("a-leader:orders:+0", "bad partition"),
    ] {
        assert_refused(
            &base_with("nodes = [\"a-broker-1\"]", &format!("nodes = [\"{node}\"]")),
            "faults.scripted[0].nodes[0]",
            32,
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
        "admin[0].configs.\"mirror.topics.include\"",
        29,
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
        "nodes = [\"a-broker-1\"]\n[[faults.scripted]]\nat_ms = 20\nkind = \"pause\"\n\
         nodes = [\"a-broker-2\"]\n[[faults.scripted]]\nat_ms = 30\nkind = \"explode\"\n",
    );
    assert_refused(
        &three_faults,
        "faults.scripted[2].kind",
        39,
        "unknown fault kind \"explode\"",
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
        "admin[0].at_ms",
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
        "admin[0].at_ms",
        26,
        "TOML syntax: duplicate key",
    );
    // Missing keys point at their table; too many clusters at the 27th.
    assert_refused(
        &base_with(
            "kind = \"kill\"\nnodes = [\"a-broker-1\"]",
            "kind = \"partition\"\nnodes = [\"a-broker-1\"]",
        ),
        "faults.scripted[0].other",
        29,
        "`partition` needs `other`",
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

#[test]
fn the_readme_fault_key_table_is_the_loaders() {
    use validate::{Use, FAULT_KEYS, FAULT_OPTIONAL_KEYS};
    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/README.md"
    ))
    .expect("scenarios/README.md");
    let header = format!(
        "| kind | {} |",
        FAULT_OPTIONAL_KEYS
            .map(|key| format!("`{key}`"))
            .join(" | ")
    );
    assert!(readme.contains(&header), "no table headed {header}");
    for (kind, uses) in FAULT_KEYS {
        let row = readme
            .lines()
            .find(|line| line.starts_with(&format!("| `{kind}` |")))
            .unwrap_or_else(|| panic!("no README row for `{kind}`"));
        let cells: Vec<&str> = row.split('|').map(str::trim).skip(2).take(8).collect();
        let documented: Vec<Use> = cells
            .iter()
            .map(|cell| match cell.chars().next() {
                Some('R') => Use::Required,
                Some('o') => Use::Optional,
                _ => Use::Refused,
            })
            .collect();
        assert_eq!(documented, uses, "README row for `{kind}`: {row}");
    }
}

#[test]
fn an_error_message_echoing_a_value_with_a_newline_stays_on_one_line() {
    // TOML's own message for a bad enum value repeats the value.
    let text = base_with(
        "topic = \"orders\"\n[[admin]]",
        "topic = \"orders\"\nisolation = \"x\\nVIOLATION invariant=liveness\"\n[[admin]]",
    );
    let error = parse(&text).unwrap_err();
    assert_eq!(error.field, "consumers[0].isolation");
    let shown = error.to_string();
    assert!(!shown.contains('\n'), "{shown:?}");
    assert!(shown.contains("x\\nVIOLATION"), "{shown}");
}
