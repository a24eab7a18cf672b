//! `chassis run` on a terminal: the answer printed on stdout as it is
//! generated (the model's text streams when its provider can), the step
//! lines on stderr as before. Only the top-level agent's text is printed;
//! a step that writes text and then calls tools shows that text too, each
//! step's text on a line of its own. A pipe or a file gets the answer
//! whole, at the end, as before.

use std::io::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::progress::Progress;
use crate::runtime::agent::{AgentEvent, AgentObserver};

/// Progress on stderr, the answer's text on stdout as it arrives.
pub struct AnswerStream {
    progress: Progress,
    /// The step whose text is being printed, and the spinner held off
    /// while its line is open.
    open: Mutex<Option<(u32, super::spinner::Paused)>>,
    printed: AtomicBool,
}

impl AnswerStream {
    /// Around `progress`; its spinner waits while a line of text is open.
    pub fn new(progress: Progress) -> Self {
        Self {
            progress,
            open: Mutex::new(None),
            printed: AtomicBool::new(false),
        }
    }

    /// Whether any text was printed (the answer need not be printed again).
    pub fn printed(&self) -> bool {
        self.printed.load(Ordering::Relaxed)
    }
}

impl AgentObserver for AnswerStream {
    fn on_event(&self, event: &AgentEvent) {
        if let AgentEvent::TextDelta {
            step,
            depth: 0,
            text,
            ..
        } = event
        {
            let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
            let mut out = std::io::stdout().lock();
            match open.as_mut() {
                Some((s, _)) if s == step => {}
                Some((s, _)) => {
                    let _ = writeln!(out);
                    *s = *step;
                }
                None => *open = Some((*step, super::spinner::pause())),
            }
            let _ = write!(out, "{text}");
            let _ = out.flush();
            self.printed.store(true, Ordering::Relaxed);
            return;
        }
        // A step line on stderr starts on a line of its own.
        if let Some((_, paused)) = self.open.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = writeln!(std::io::stdout().lock());
            drop(paused);
        }
        self.progress.on_event(event);
    }

    fn wants_text(&self) -> bool {
        true
    }
}
