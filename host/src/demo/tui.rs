//! The story on a terminal: one screen redrawn in place (ratatui over crossterm), with the
//! guest panel, every Service's two outputs side by side, and a line per step. `q` or Ctrl-C
//! quits (in raw mode Ctrl-C arrives as a key, not as SIGINT).

use std::time::Duration;

use crossterm::event::{Event as TermEvent, EventStream, KeyCode, KeyEventKind, KeyModifiers};
use futures::StreamExt;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row as TableRow, Table, Wrap};
use std::sync::Arc;

use tokio::sync::{Notify, mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::board::{Board, Listed};
use super::plain::{Ending, Intro};
use super::status::GuestPanel;
use super::story::{Event, STEPS, Step};

/// How often the screen is redrawn without a change of the outputs (the guest panel's
/// counters change without one).
const REDRAW: Duration = Duration::from_millis(250);

/// Where a step stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Progress {
    Pending,
    Running,
    Done(String),
    Failed(String),
}

/// The story's side of the screen.
struct StoryView {
    steps: Vec<(Step, Progress)>,
    finished: bool,
}

impl StoryView {
    fn apply(&mut self, event: Event) {
        match event {
            Event::Started { step, .. } => self.steps[step - 1].1 = Progress::Running,
            Event::Done { step, summary, .. } => self.steps[step - 1].1 = Progress::Done(summary),
            Event::Failed { step, error, .. } => self.steps[step - 1].1 = Progress::Failed(error),
        }
    }

    /// How the story ended, for `--exit-after-story`.
    fn ending(&self) -> Ending {
        if self
            .steps
            .iter()
            .all(|(_, p)| matches!(p, Progress::Done(_)))
        {
            Ending::StoryDone
        } else {
            Ending::StoryFailed
        }
    }

    fn lines(&self) -> Vec<Line<'static>> {
        let total = self.steps.len();
        self.steps
            .iter()
            .enumerate()
            .map(|(i, (step, progress))| {
                let n = i + 1;
                let title = step.title();
                let (mark, text) = match progress {
                    Progress::Pending => ("[  ]", String::new()),
                    Progress::Running => ("[..]", "waiting for the cluster".to_string()),
                    Progress::Done(summary) => ("[ok]", summary.clone()),
                    Progress::Failed(error) => ("[!!]", format!("FAILED: {error}")),
                };
                Line::from(format!("{mark} {n}/{total} {title}: {text}"))
            })
            .collect()
    }
}

/// Runs the view until `q`, Ctrl-C or `shutdown` (or, with `exit_after_story`, the story's
/// end). The terminal is restored on every way out (ratatui's panic hook covers a panic).
pub async fn run(
    intro: &Intro,
    mut events: mpsc::UnboundedReceiver<Event>,
    mut board: watch::Receiver<Board>,
    panel: impl Fn() -> GuestPanel,
    exit_after_story: bool,
    next_step: Arc<Notify>,
    shutdown: CancellationToken,
) -> std::io::Result<Ending> {
    let mut terminal = ratatui::try_init()?;
    let mut keys = EventStream::new();
    let mut story = StoryView {
        steps: STEPS.iter().map(|s| (*s, Progress::Pending)).collect(),
        finished: intro.no_story.is_some(),
    };
    let mut tick = tokio::time::interval(REDRAW);
    let result = loop {
        let shown = board.borrow_and_update().clone();
        if let Err(e) = terminal.draw(|frame| draw(frame, intro, &shown, &panel(), &story)) {
            break Err(e);
        }
        tokio::select! {
            _ = shutdown.cancelled() => break Ok(Ending::Stopped),
            key = keys.next() => match key {
                Some(Ok(TermEvent::Key(key))) if key.kind == KeyEventKind::Press => {
                    let ctrl_c = key.code == KeyCode::Char('c')
                        && key.modifiers.contains(KeyModifiers::CONTROL);
                    if ctrl_c || key.code == KeyCode::Char('q') {
                        break Ok(Ending::Stopped);
                    }
                    if key.code == KeyCode::Char(' ') || key.code == KeyCode::Enter {
                        next_step.notify_one();
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => break Err(e),
                None => break Ok(Ending::Stopped),
            },
            event = events.recv(), if !story.finished => match event {
                Some(event) => story.apply(event),
                None if exit_after_story => break Ok(story.ending()),
                None => story.finished = true,
            },
            _ = board.changed() => {}
            _ = tick.tick() => {}
        }
    };
    ratatui::restore();
    result
}

fn names(
    listed: Option<&Listed>,
    pick: fn(&Listed) -> &std::collections::BTreeSet<String>,
) -> String {
    match listed {
        None => "-".into(),
        Some(l) => pick(l).iter().cloned().collect::<Vec<_>>().join(" "),
    }
}

fn draw(frame: &mut Frame, intro: &Intro, board: &Board, panel: &GuestPanel, story: &StoryView) {
    let rows = board.rows.len() as u16;
    let [header, guests, services, steps, footer] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(5),
        Constraint::Length(rows + 3),
        Constraint::Min(STEPS.len() as u16 + 2),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(
        Paragraph::new(vec![
            Line::from(format!("weir demo: API server at {}", intro.server)),
            Line::from(format!(
                "kubeconfig {}   logs {}",
                intro.kubeconfig.display(),
                intro.log_file.display()
            )),
        ]),
        header,
    );
    let shadow = match &panel.shadow {
        Some((guest, same, different, failed)) => {
            format!("shadow  {guest}: same {same}, different {different}, failed {failed}")
        }
        None => "shadow  none".into(),
    };
    frame.render_widget(
        Paragraph::new(vec![
            Line::from(format!("active  {}", panel.active)),
            Line::from(shadow),
            Line::from(format!(
                "last refusal  {}",
                panel.last_refusal.as_deref().unwrap_or("none")
            )),
        ])
        .block(Block::default().borders(Borders::ALL).title(" Guests ")),
        guests,
    );
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let table = Table::new(
        board.rows.iter().map(|(key, row)| {
            let e = row.endpoints.as_ref();
            let s = row.slices.as_ref();
            TableRow::new(vec![
                Cell::from(key.clone()),
                Cell::from(names(e, |l| &l.ready)),
                Cell::from(names(e, |l| &l.not_ready)),
                Cell::from(names(s, |l| &l.ready)),
                Cell::from(names(s, |l| &l.not_ready)),
                Cell::from(names(s, |l| &l.terminating)),
            ])
        }),
        [
            Constraint::Percentage(16),
            Constraint::Percentage(20),
            Constraint::Percentage(12),
            Constraint::Percentage(20),
            Constraint::Percentage(12),
            Constraint::Percentage(20),
        ],
    )
    .header(
        TableRow::new(vec![
            "SERVICE",
            "ENDPOINTS ready",
            "not ready",
            "SLICES ready",
            "not ready",
            "terminating",
        ])
        .style(bold),
    )
    .block(
        Block::default()
            .borders(Borders::ALL)
            .title(" Services: Endpoints | EndpointSlices "),
    );
    frame.render_widget(table, services);
    frame.render_widget(
        Paragraph::new(story.lines())
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(" Story ")),
        steps,
    );
    let hint = if story.finished {
        format!(
            "story done; explore: {}   q or Ctrl-C quits",
            intro.kubectl()
        )
    } else {
        "space: next step   q or Ctrl-C quits".to_string()
    };
    frame.render_widget(Paragraph::new(hint), footer);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use crate::demo::board::Row;
    use crate::demo::status::GuestLine;

    #[test]
    fn the_screen_shows_both_outputs_the_guests_and_the_steps() {
        let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
        let mut board = Board::default();
        board.rows.insert(
            "shop/web".into(),
            Row {
                endpoints: Some(Listed {
                    ready: set(&["web-0"]),
                    not_ready: set(&["web-3"]),
                    terminating: set(&[]),
                }),
                slices: Some(Listed {
                    ready: set(&["web-0"]),
                    not_ready: set(&["web-3"]),
                    terminating: set(&["web-1"]),
                }),
            },
        );
        let intro = Intro {
            server: "https://127.0.0.1:1".into(),
            kubeconfig: "kc".into(),
            log_file: "log".into(),
            no_story: None,
        };
        let panel = GuestPanel {
            active: GuestLine {
                name: "default".into(),
                world: "weir:endpoints@0.2.0",
                digest: "sha256:0123".into(),
            },
            shadow: None,
            last_refusal: Some("compile: bad".into()),
        };
        let mut story = StoryView {
            steps: STEPS.iter().map(|s| (*s, Progress::Pending)).collect(),
            finished: false,
        };
        story.apply(Event::Done {
            step: 1,
            which: Step::Converge,
            summary: "converged".into(),
        });
        story.apply(Event::Started {
            step: 2,
            which: Step::ReadyFlips,
        });
        let mut terminal = Terminal::new(TestBackend::new(140, 30)).unwrap();
        terminal
            .draw(|f| draw(f, &intro, &board, &panel, &story))
            .unwrap();
        let screen: String = terminal
            .backend()
            .buffer()
            .content()
            .chunks(140)
            .map(|line| line.iter().map(|c| c.symbol()).collect::<String>() + "\n")
            .collect();
        for expected in [
            "active  default (weir:endpoints@0.2.0, sha256:0123)",
            "last refusal  compile: bad",
            "[ok] 1/7 converge: converged",
            "[..] 2/7 ready flips: waiting for the cluster",
            "[  ] 3/7 rolling update",
        ] {
            assert!(screen.contains(expected), "{expected:?} missing:\n{screen}");
        }
        let web = screen.lines().find(|l| l.contains("shop/web")).unwrap();
        let cells: Vec<&str> = web
            .trim_matches(|c| c == '│' || c == ' ')
            .split_whitespace()
            .collect();
        assert_eq!(
            cells,
            ["shop/web", "web-0", "web-3", "web-0", "web-3", "web-1"]
        );
    }
}
