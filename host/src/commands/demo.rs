//! `weir demo`: wires the demo together (API server, controller, swapper, watches, story)
//! and picks the rendering: a live view on a terminal, plain lines otherwise. The story and
//! its renderings live in `weir::demo`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;
use weir::controller::{Config, Controller};
use weir::demo::guests::{DRAIN_ANNOTATION, Names};
use weir::demo::plain::{Ending, Intro};
use weir::demo::stage::Stage;
use weir::demo::story::subject;
use weir::demo::{observe, plain, status, tui};
use weir::runtime::{ActiveGuest, DEFAULT_GUEST, Runtime};
use weir::swap::{SwapConfig, Swapper};

/// The demo objects, embedded so the demo works from any directory.
const DEMO_SEED: &str = include_str!("../../../deploy/demo/seed.yaml");

/// Run weir with no cluster: a one-minute story on the embedded API server, then a
/// playground.
///
/// The story: the guest converges the demo Services; pods flip readiness and one is replaced
/// (terminating in EndpointSlices); a pod annotated `weir.dev/drain=true` shows what the
/// drain-annotation example, running as shadow guest, would change; that guest is swapped in
/// live and drains annotated pods from both outputs; a broken guest is refused while it keeps
/// serving; the first guest comes back. Each step waits until the cluster shows its effect.
///
/// On a terminal the view redraws in place; `q` or Ctrl-C quits. Otherwise (a pipe, CI) each
/// step prints one line. Either way the demo then keeps running for `kubectl --kubeconfig
/// PATH ...` (the path is shown) until Ctrl-C or SIGTERM, with exit status 0. Logs go to the
/// file shown, never over the view.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    guest: super::GuestArgs,

    /// Objects to load instead of the built-in demo data (multi-document YAML or a List). The
    /// story acts on its first Service that selects three ready pods bound to a node; without
    /// one there is only the playground.
    #[arg(long, env = "WEIR_DEMO_SEED", value_name = "FILE")]
    seed: Option<PathBuf>,

    /// Where to write the kubeconfig of the demo API server. Default: a file in the system's
    /// temporary directory.
    #[arg(long, env = "WEIR_DEMO_KUBECONFIG", value_name = "PATH")]
    kubeconfig: Option<PathBuf>,

    /// Where the logs go. Default: `weir-demo-PID.log` in the system's temporary directory.
    #[arg(long, env = "WEIR_DEMO_LOG_FILE", value_name = "PATH")]
    log_file: Option<PathBuf>,

    /// How long each step of the story may wait for the cluster to show its effect (more
    /// than 0, at most 1h).
    #[arg(long, env = "WEIR_DEMO_STEP_TIMEOUT", default_value = "30s", value_parser = super::duration::within(super::duration::Min::AboveZero, super::duration::HOUR))]
    step_timeout: Duration,

    /// On a terminal, how long the view holds each finished step before the next, so it can
    /// be read; space or Enter goes on at once (at most 1day). Plain lines do not pause.
    #[arg(long, env = "WEIR_DEMO_PACE", default_value = "6s", value_parser = super::duration::within(super::duration::Min::Zero, super::duration::DAY))]
    pace: Duration,

    /// Exit once the story is told: status 0 when every step showed its effect, 1 when one
    /// did not (for scripts and CI). Default: keep running as a playground.
    #[arg(long, env = "WEIR_DEMO_EXIT_AFTER_STORY")]
    exit_after_story: bool,

    /// Stop by itself after this long (for scripts and CI; more than 0, at most 1day).
    /// Default: run until stopped.
    #[arg(long = "for", env = "WEIR_DEMO_FOR", value_name = "DURATION", value_parser = super::duration::within(super::duration::Min::AboveZero, super::duration::DAY))]
    run_for: Option<Duration>,
}

impl Args {
    /// The file the logs go to.
    pub fn log_file(&self) -> PathBuf {
        self.log_file.clone().unwrap_or_else(|| {
            std::env::temp_dir().join(format!("weir-demo-{}.log", std::process::id()))
        })
    }
}

/// Runs the command.
pub fn run(args: Args) -> ExitCode {
    super::block_on_code(demo(args))
}

async fn demo(args: Args) -> anyhow::Result<ExitCode> {
    let seed_text = match &args.seed {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --seed {}", path.display()))?,
        None => DEMO_SEED.to_string(),
    };
    let seed = weir_apiserver::parse_seed(&seed_text).context("demo seed")?;
    let subject = subject(&seed);
    let server = weir_apiserver::ApiServer::start(weir_apiserver::Config {
        seed,
        ..Default::default()
    })
    .await?;
    let kubeconfig = args.kubeconfig.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("weir-demo-{}.kubeconfig", std::process::id()))
    });
    server
        .write_kubeconfig(&kubeconfig)
        .with_context(|| format!("cannot write {}", kubeconfig.display()))?;

    let runtime = Runtime::new(args.guest.limits())?;
    let (first_bytes, first_name) = match &args.guest.guest {
        None => (DEFAULT_GUEST.to_vec(), "default".to_string()),
        Some(path) => (
            std::fs::read(path).with_context(|| format!("cannot read guest {}", path.display()))?,
            path.file_stem()
                .map_or("custom".into(), |s| s.to_string_lossy().into_owned()),
        ),
    };
    let guest = runtime
        .load_async(first_bytes.clone())
        .await
        .context("the demo's guest")?;
    // The demo runs the policy without configuration; a policy that needs one says so now.
    guest
        .validate_config(&Config::default().policy_config)
        .await
        .context("the policy refuses to run without a configuration")?;
    let shadow = runtime
        .load_async(DRAIN_ANNOTATION.to_vec())
        .await
        .context("the embedded drain-annotation guest")?;
    let names = Arc::new(Names::default());
    names.add("drain-annotation", DRAIN_ANNOTATION);
    names.add(&first_name, &first_bytes);

    let client = super::run::client(
        Some(&kubeconfig),
        &super::run::user_agent("demo"),
        weir::client::ApiRate::KCM,
    )
    .await?;
    let controller = Controller::new(
        client.clone(),
        ActiveGuest::new(guest),
        Config {
            shadow: Some(shadow.clone()),
            ..Config::default()
        },
    );
    let handle = controller.handle();
    let swapper = Swapper::new(runtime, handle.clone(), SwapConfig::default());
    let shutdown = CancellationToken::new();
    super::run::cancel_on_signal(shutdown.clone());
    if let Some(limit) = args.run_for {
        let token = shutdown.clone();
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            token.cancel();
        });
    }
    let board = observe::observe(client.clone(), shutdown.clone());
    let controller = tokio::spawn(controller.run(shutdown.clone()));

    let (events, story_events) = mpsc::unbounded_channel();
    let terminal = std::io::stdout().is_terminal();
    let next_step = Arc::new(Notify::new());
    let no_story = subject.is_none().then(|| {
        "the seed has no Service selecting three ready pods bound to a node \
         (and not publishing not-ready addresses)"
            .to_string()
    });
    let story = subject.map(|subject| {
        let stage = Stage {
            client: client.clone(),
            board: board.clone(),
            handle: handle.clone(),
            swapper: swapper.clone(),
            first: (first_bytes, first_name),
            shadow: shadow.clone(),
            step_timeout: args.step_timeout,
            subject,
            pause: terminal.then(|| (next_step.clone(), args.pace)),
        };
        tokio::spawn(async move {
            if let Err(e) = stage.run(&events).await {
                tracing::warn!(error = %e, "the demo story stopped short");
            }
        })
    });
    let intro = Intro {
        server: server.url(),
        kubeconfig: kubeconfig.clone(),
        log_file: args.log_file(),
        no_story,
    };
    let ending = if terminal {
        let panel = || status::panel(&handle, &swapper, &names, Some(&shadow));
        tui::run(
            &intro,
            story_events,
            board,
            panel,
            args.exit_after_story,
            next_step,
            shutdown.clone(),
        )
        .await
        .context("the terminal view")?
    } else {
        plain::run(
            &intro,
            story_events,
            args.exit_after_story,
            shutdown.clone(),
        )
        .await
    };
    shutdown.cancel();
    if let Some(story) = story {
        story.abort();
    }
    let _ = controller.await;
    server.shutdown().await;
    if args.kubeconfig.is_none() {
        let _ = std::fs::remove_file(&kubeconfig);
    }
    println!("weir demo: stopped");
    Ok(match ending {
        Ending::Stopped | Ending::StoryDone => ExitCode::SUCCESS,
        Ending::StoryFailed => ExitCode::FAILURE,
    })
}
