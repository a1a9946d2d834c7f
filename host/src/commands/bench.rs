//! `weir bench CASE...`: how long a guest takes per call, phase by phase (like `kwctl bench`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use weir::cases::{Case, ManagedOutput, compare_outcome, discover};
use weir::runtime::Guest;

/// Time a guest on case files: min, median, p99 and max per call phase.
///
/// Per case, many calls, each split into instantiate (fresh store and instance), call
/// (lowering the request, `reconcile`, lifting the decision), release (dropping the instance,
/// which resets its pooled memory for the next call) and validate (the host's contract
/// check), plus their total. Every call runs as the controller runs it: a new
/// instance per call, with the deadline and memory limits of the flags. A case that manages
/// both Endpoints and EndpointSlices (the default) is also timed managing Endpoints only, call
/// for call in alternation with it so that a machine's drift weighs on both alike, and the
/// difference is printed: what rendering the slices costs. A case whose call
/// fails is reported and not timed. Exits 0 when every case was timed, 1 when a case failed,
/// 2 on bad arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    guest: super::GuestArgs,

    #[command(flatten)]
    policy_config: super::policy_config::PolicyConfigArgs,

    /// Timed calls per case, after the warm-up.
    #[arg(long, short = 'n', env = "WEIR_BENCH_ITERATIONS", default_value_t = 200,
          value_parser = clap::value_parser!(u32).range(1..))]
    iterations: u32,

    /// Untimed calls per case before timing starts, so one-off costs (page faults in freshly
    /// compiled code, allocator growth) do not land in the numbers.
    #[arg(long, env = "WEIR_BENCH_WARMUP", default_value_t = 20)]
    warmup: u32,

    /// Case files or directories (searched recursively, as `weir test` does).
    #[arg(required = true, value_name = "CASE")]
    paths: Vec<PathBuf>,
}

/// Order statistics of one phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Fastest sample.
    pub min: Duration,
    /// Median (the lower one for an even count).
    pub median: Duration,
    /// 99th percentile, nearest rank.
    pub p99: Duration,
    /// Slowest sample.
    pub max: Duration,
}

impl Summary {
    /// Summarises `samples`; `None` when there are none.
    pub fn of(samples: &[Duration]) -> Option<Summary> {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        // Nearest rank: the smallest sample with at least q of all samples at or below it.
        let rank = |q: f64| {
            let n = sorted.len() as f64;
            ((q * n).ceil() as usize).clamp(1, sorted.len()) - 1
        };
        Some(Summary {
            min: *sorted.first()?,
            median: sorted[rank(0.5)],
            p99: sorted[rank(0.99)],
            max: *sorted.last()?,
        })
    }
}

/// Samples of each phase, one per timed call.
#[derive(Debug, Default)]
struct Samples {
    instantiate: Vec<Duration>,
    call: Vec<Duration>,
    release: Vec<Duration>,
    validate: Vec<Duration>,
    total: Vec<Duration>,
}

/// Runs the command.
pub fn run(args: Args) -> ExitCode {
    super::exit_code_of(bench(args))
}

async fn bench(args: Args) -> ExitCode {
    let files = match discover(&args.paths) {
        Ok(files) => files,
        Err(e) => {
            eprintln!("weir: {e}");
            return ExitCode::from(2);
        }
    };
    let guest = match args.guest.load_or_report().await {
        Ok(guest) => guest,
        Err(code) => return code,
    };
    let config = match args.policy_config.load_or_report(&guest).await {
        Ok(config) => config,
        Err(code) => return code,
    };
    // The guest loaded, so its source parsed.
    let source = args
        .guest
        .source()
        .map(|source| source.describe())
        .unwrap_or_default();
    let source = match &args.policy_config.policy_config {
        Some(path) => format!("{source} with --policy-config {}", path.display()),
        None => source,
    };
    println!(
        "guest: {source} (sha256 {}, {} KiB); {} timed calls per case after {} warm-up",
        &guest.digest()[..12],
        guest.size().div_ceil(1024),
        args.iterations,
        args.warmup
    );
    let mut failed = 0usize;
    for path in &files {
        let case = match Case::load(path) {
            Ok(mut case) => {
                config.apply(&mut case);
                case
            }
            Err(e) => {
                failed += 1;
                println!("\nFAIL {e}");
                continue;
            }
        };
        let pods = case.request().pods.len();
        // The first call doubles as the check that the case runs at all.
        let outcome = match case.run(&guest).await {
            Ok(outcome) => outcome,
            Err(e) => {
                failed += 1;
                println!("\nFAIL {}: {e}", path.display());
                continue;
            }
        };
        let mismatch = case
            .expect
            .as_ref()
            .is_some_and(|e| !compare_outcome(&case, e, &outcome).is_empty());
        // Both renderings come from one call; timing the same case with Endpoints only shows
        // what the EndpointSlices add. The two are timed in alternation, call by call, so a
        // machine that slows down or speeds up during the run weighs on both alike.
        let endpoints_only =
            (case.outputs().endpoint_slices && case.outputs().endpoints).then(|| {
                let mut endpoints_only = case.clone();
                endpoints_only.manage = Some(vec![ManagedOutput::Endpoints]);
                endpoints_only
            });
        let cases: Vec<&Case> = std::iter::once(&case)
            .chain(endpoints_only.as_ref())
            .collect();
        let mut timed = match time_cases(&cases, &guest, &args).await {
            Ok(samples) => samples.into_iter(),
            Err(e) => {
                // A guest that succeeds once and then fails (a deadline missed under load)
                // is worth knowing about; its timings would mislead, so stop this case.
                failed += 1;
                println!("\nFAIL {}: a timed call failed: {e}", path.display());
                continue;
            }
        };
        let Some(samples) = timed.next() else {
            continue;
        };
        println!(
            "\n{} ({pods} pods selected): {}{}",
            path.display(),
            outcome.action.name(),
            if mismatch {
                " (differs from the case's expect; see `weir test`)"
            } else {
                ""
            }
        );
        print!("{}", table(&samples));
        // The Endpoints-only samples, when they were taken, come next.
        if let Some(base) = timed.next() {
            println!("  the same case managing Endpoints only:");
            print!("{}", table(&base));
            if let (Some(both), Some(one)) = (Summary::of(&samples.total), Summary::of(&base.total))
            {
                let extra = both.median.as_secs_f64() / one.median.as_secs_f64() - 1.0;
                println!(
                    "  EndpointSlices add {:+.0}% to the median total ({} vs {})",
                    extra * 100.0,
                    human(both.median),
                    human(one.median)
                );
            }
        }
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Times `cases` after warming each up: every round calls each case once, in order, so
/// their samples are taken side by side. Stops at the first call that fails.
async fn time_cases(cases: &[&Case], guest: &Guest, args: &Args) -> Result<Vec<Samples>, String> {
    for _ in 0..args.warmup {
        for case in cases {
            let _ = case.run_timed(guest).await;
        }
    }
    let mut all: Vec<Samples> = cases.iter().map(|_| Samples::default()).collect();
    for _ in 0..args.iterations {
        for (case, samples) in cases.iter().zip(&mut all) {
            let (result, timing, validate) = case.run_timed(guest).await;
            result.map_err(|e| e.to_string())?;
            samples.instantiate.push(timing.instantiate);
            samples.call.push(timing.call);
            samples.release.push(timing.release);
            samples.validate.push(validate);
            samples.total.push(timing.total() + validate);
        }
    }
    Ok(all)
}

fn table(samples: &Samples) -> String {
    let mut out = format!(
        "  {:<12} {:>10} {:>10} {:>10} {:>10}\n",
        "phase", "min", "median", "p99", "max"
    );
    for (name, values) in [
        ("instantiate", &samples.instantiate),
        ("call", &samples.call),
        ("release", &samples.release),
        ("validate", &samples.validate),
        ("total", &samples.total),
    ] {
        if let Some(s) = Summary::of(values) {
            out.push_str(&format!(
                "  {:<12} {:>10} {:>10} {:>10} {:>10}\n",
                name,
                human(s.min),
                human(s.median),
                human(s.p99),
                human(s.max)
            ));
        }
    }
    out
}

/// A duration in µs below 10 ms, else in ms, with one decimal.
fn human(d: Duration) -> String {
    let micros = d.as_secs_f64() * 1e6;
    if micros < 10_000.0 {
        format!("{micros:.1} µs")
    } else {
        format!("{:.1} ms", micros / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn summary_uses_nearest_rank() {
        let samples: Vec<Duration> = (1..=200).rev().map(us).collect();
        let s = Summary::of(&samples).unwrap();
        assert_eq!(s.min, us(1));
        assert_eq!(s.median, us(100));
        assert_eq!(s.p99, us(198));
        assert_eq!(s.max, us(200));
    }

    #[test]
    fn summary_of_one_and_none() {
        let s = Summary::of(&[us(7)]).unwrap();
        assert_eq!(
            (s.min, s.median, s.p99, s.max),
            (us(7), us(7), us(7), us(7))
        );
        assert_eq!(Summary::of(&[]), None);
    }

    #[test]
    fn human_switches_units() {
        assert_eq!(human(Duration::from_nanos(12_345)), "12.3 µs");
        assert_eq!(human(us(12_500)), "12.5 ms");
    }
}
