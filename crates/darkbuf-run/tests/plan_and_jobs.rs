//! Plans, jobs on the wire, and assembly: what lets another process or machine run
//! the jobs and still print the CLI's bytes.

use darkbuf_run::{results_json, split_sets, Error, Job, JobOutput, Output, Plan, Source};
use std::path::PathBuf;

fn repo(p: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(p)
}

/// veth-bql, short.
fn short() -> Vec<String> {
    vec!["duration=200ms".into(), "warmup=50ms".into()]
}

fn source() -> Source {
    Source::read(&repo("scenarios/veth-bql.toml")).expect("the repository's scenario reads")
}

#[test]
fn split_sets_follows_the_cli_rule() {
    let set: Vec<String> = ["a.b=1,2", "c=3", "d=[0,1]", "e= [2, 3]", "f=x,y", "g=\"p,q\"", "h=\"p,q\",r", "i=[0],[1,2]", "j=it's,x"]
        .map(String::from)
        .to_vec();
    let (sweeps, fixed) = split_sets(&set);
    assert_eq!(sweeps, ["a.b=1,2", "f=x,y", "h=\"p,q\",r", "i=[0],[1,2]", "j=it's,x"]);
    assert_eq!(fixed, ["c=3", "d=[0,1]", "e= [2, 3]", "g=\"p,q\""]);
}

#[test]
fn a_job_rebuilds_its_points_scenario() {
    let sweeps = vec!["consumer.nrules=0,3500".to_string()];
    let plan = Plan::sweep(source(), &short(), &sweeps, Some(2), Some(9)).unwrap();
    let jobs = plan.jobs();
    assert_eq!(jobs.len(), 4, "2 points x 2 runs");
    assert_eq!(jobs.iter().map(|j| j.run_seed).collect::<Vec<_>>(), [9, 10, 9, 10]);
    for (i, job) in jobs.iter().enumerate() {
        let back = Job::from_json(&job.to_json()).unwrap();
        assert_eq!(&back, job);
        let point = &plan.points[i / 2];
        assert_eq!(
            serde_json::to_value(back.scenario().unwrap()).unwrap(),
            serde_json::to_value(&point.scenario).unwrap(),
            "job {i}"
        );
    }
    assert_eq!(plan.points[1].label, "consumer.nrules=3500");
    assert_eq!(plan.points[1].set, ["consumer.nrules=3500"]);
}

#[test]
fn outputs_through_json_assemble_to_the_same_bytes() {
    let plan = Plan::sweep(source(), &short(), &["device.bql.limit_min=0,8".into()], Some(2), None).unwrap();
    let outs: Vec<_> = plan.jobs().iter().map(|j| j.run().unwrap()).collect();
    let wired: Vec<_> = outs.iter().map(|o| JobOutput::from_json(&JobOutput::to_json(o)).unwrap()).collect();
    assert_eq!(wired, outs);
    let here = plan.assemble(outs).unwrap();
    let there = plan.assemble(wired).unwrap();
    assert!(matches!(here, Output::Sweep(ref s) if s.points.len() == 2 && s.points[0].results.runs.len() == 2));
    assert_eq!(here.json(), there.json());
}

#[test]
fn a_run_plan_is_darkbuf_run() {
    let plan = Plan::run(source(), &short(), None, None).unwrap();
    let outs: Vec<_> = plan.jobs().iter().map(|j| j.run().unwrap()).collect();
    let Output::Run(r) = plan.assemble(outs).unwrap() else { panic!("a run plan gives a run's results") };
    assert_eq!(r.scenario["name"], "veth-bql");
    assert_eq!(r.environment.kernel, "sim");
    assert_eq!(r.runs.len(), 1);
    let json = results_json(&r).unwrap();
    assert!(json.ends_with("}\n") && json.starts_with("{\n  \"backend\": \"sim\""), "keys sorted, pretty: {}", &json[..40]);
}

#[test]
fn assemble_wants_one_output_per_job() {
    let plan = Plan::run(source(), &short(), Some(2), None).unwrap();
    let one = plan.jobs()[0].run().unwrap();
    assert!(matches!(plan.assemble(vec![one]), Err(Error::Internal(m)) if m.contains("1 job outputs for 2 jobs")));
}

#[test]
fn a_bad_point_fails_the_plan_with_its_position() {
    let src = Source::text("inline.toml", "duration = \"1s\"\n[[traffic]]\nkind = \"udp\"\n[sweep]\n\"consumer.nrules\" = [0, -5]\n");
    match Plan::sweep(src, &[], &[], None, None) {
        Err(Error::Scenario(d)) => {
            assert_eq!((d.file.as_str(), d.line), ("inline.toml", Some(5)));
            assert_eq!(d.key, "consumer.nrules");
        }
        other => panic!("expected a diagnostic, got {other:?}"),
    }
}

#[test]
fn an_unknown_profile_fails_the_plan() {
    // Checked with the scenario: a diagnostic at the --set, listing the built-in names.
    let err = Plan::run(source(), &["machine.profile=laptop".into()], None, None).unwrap_err();
    assert!(
        matches!(err, Error::Scenario(ref d) if d.key == "machine.profile" && d.file == "--set machine.profile=laptop" && d.message.contains("laptop") && d.help.as_deref().unwrap_or("").contains("seed-vm")),
        "{err}"
    );
}
