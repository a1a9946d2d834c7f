//! The story as plain lines, one per step, for a pipe, a log or CI: what `weir demo` prints
//! when its standard output is not a terminal.

use std::io::Write;
use std::path::PathBuf;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::story::Event;

/// What the demo says before the story: where things are.
#[derive(Debug, Clone)]
pub struct Intro {
    /// The API server's URL.
    pub server: String,
    /// The kubeconfig written for it.
    pub kubeconfig: PathBuf,
    /// Where the logs go.
    pub log_file: PathBuf,
    /// Why there is no story, when there is none.
    pub no_story: Option<String>,
}

impl Intro {
    /// The kubectl command that shows both outputs.
    pub fn kubectl(&self) -> String {
        format!(
            "kubectl --kubeconfig {} get endpoints,endpointslices -A",
            self.kubeconfig.display()
        )
    }
}

/// How the demo ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Stopped by a signal, a key, or `--for`.
    Stopped,
    /// `--exit-after-story`: every step showed its effect.
    StoryDone,
    /// `--exit-after-story`: a step failed.
    StoryFailed,
}

/// Prints the story as it happens, then waits for `shutdown`, or returns at once after the
/// story when `exit_after_story` is set.
pub async fn run(
    intro: &Intro,
    mut events: mpsc::UnboundedReceiver<Event>,
    exit_after_story: bool,
    shutdown: CancellationToken,
) -> Ending {
    let say = |line: String| {
        let mut out = std::io::stdout().lock();
        // A closed pipe is no reason to stop the demo.
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    };
    say(format!("weir demo: API server at {}", intro.server));
    say(format!(
        "weir demo: kubeconfig at {}",
        intro.kubeconfig.display()
    ));
    say(format!("weir demo: logs in {}", intro.log_file.display()));
    if let Some(why) = &intro.no_story {
        say(format!("weir demo: no story: {why}"));
    }
    let mut failed = false;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ending::Stopped,
            event = events.recv() => match event {
                // Only ends are lines: a step that started is still waiting for the cluster.
                Some(Event::Started { .. }) => {}
                Some(event) => {
                    failed |= matches!(event, Event::Failed { .. });
                    say(event.line());
                }
                None => break,
            }
        }
    }
    if failed {
        say("weir demo: the story stopped short (see the step above)".into());
    } else if intro.no_story.is_none() {
        say("weir demo: story done".into());
    }
    if exit_after_story {
        return if failed {
            Ending::StoryFailed
        } else {
            Ending::StoryDone
        };
    }
    say(format!(
        "weir demo: the cluster is yours: {}",
        intro.kubectl()
    ));
    say("weir demo: Ctrl-C stops".into());
    shutdown.cancelled().await;
    Ending::Stopped
}
