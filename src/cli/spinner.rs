//! A one-line spinner on stderr while `chassis run` waits on a model call
//! or a tool call — only when stderr is a terminal, so logs and CI keep
//! the plain progress lines.
//!
//! Why a process-wide slot: the progress lines, the approval prompt and the
//! spinner all write to the same terminal line. Everything that writes a
//! whole line goes through [`clear_then`], which erases a drawn spinner
//! first, and the approval prompt holds [`pause`] while it asks, so the
//! spinner never draws over a question or a finished line. Locks are
//! always taken in one order — the spinner's state, then stderr.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const TICK: Duration = Duration::from_millis(100);

#[derive(Default)]
struct State {
    /// What is being waited on, and since when.
    waiting: Option<(String, Instant)>,
    /// Whether the spinner's line is on the terminal now.
    drawn: bool,
    /// Prompts in progress (the spinner does not draw while > 0).
    paused: u32,
    frame: usize,
}

fn slot() -> &'static Mutex<Option<Arc<Mutex<State>>>> {
    static SLOT: OnceLock<Mutex<Option<Arc<Mutex<State>>>>> = OnceLock::new();
    SLOT.get_or_init(|| Mutex::new(None))
}

fn state() -> Option<Arc<Mutex<State>>> {
    slot()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

fn erase(s: &mut State, err: &mut impl Write) {
    if s.drawn {
        let _ = write!(err, "\r\x1b[2K");
        s.drawn = false;
    }
}

/// Start the spinner (once per process; a no-op when it runs already).
/// The caller decides that stderr is a terminal.
pub fn start() {
    let mut slot = slot().lock().unwrap_or_else(PoisonError::into_inner);
    if slot.is_some() {
        return;
    }
    let shared = Arc::new(Mutex::new(State::default()));
    *slot = Some(Arc::clone(&shared));
    let weak = Arc::downgrade(&shared);
    let spawned = std::thread::Builder::new()
        .name("chassis-spinner".into())
        .spawn(move || {
            while let Some(shared) = weak.upgrade() {
                {
                    let mut s = shared.lock().unwrap_or_else(PoisonError::into_inner);
                    if s.paused == 0
                        && let Some((label, since)) = s.waiting.clone()
                    {
                        s.frame = (s.frame + 1) % FRAMES.len();
                        let mut err = std::io::stderr().lock();
                        let _ = write!(
                            err,
                            "\r\x1b[2K{} {label}  {:.1}s",
                            FRAMES[s.frame],
                            since.elapsed().as_secs_f64()
                        );
                        let _ = err.flush();
                        s.drawn = true;
                    }
                }
                drop(shared);
                std::thread::sleep(TICK);
            }
        });
    if spawned.is_err() {
        *slot = None;
    }
}

/// Stop the spinner, erasing its line.
pub fn stop() {
    let taken = slot().lock().unwrap_or_else(PoisonError::into_inner).take();
    if let Some(shared) = taken {
        let mut s = shared.lock().unwrap_or_else(PoisonError::into_inner);
        erase(&mut s, &mut std::io::stderr().lock());
    }
}

/// Show `label` (e.g. `model step 2`) until the next line is written.
pub fn waiting(label: String) {
    if let Some(shared) = state() {
        let mut s = shared.lock().unwrap_or_else(PoisonError::into_inner);
        s.waiting = Some((label, Instant::now()));
    }
}

/// Write `line` (and a newline) to stderr, erasing the spinner first and
/// ending the wait it showed.
pub fn clear_then(line: &str) {
    // Lock order everywhere: the state, then stderr.
    let shared = state();
    let mut guard = shared
        .as_ref()
        .map(|s| s.lock().unwrap_or_else(PoisonError::into_inner));
    let mut err = std::io::stderr().lock();
    if let Some(s) = guard.as_deref_mut() {
        erase(s, &mut err);
        s.waiting = None;
    }
    let _ = writeln!(err, "{line}");
}

/// While the guard lives the spinner does not draw (a prompt is asking).
pub struct Paused(Option<Arc<Mutex<State>>>);

/// Pause the spinner and erase its line.
pub fn pause() -> Paused {
    let shared = state();
    if let Some(shared) = &shared {
        let mut s = shared.lock().unwrap_or_else(PoisonError::into_inner);
        s.paused += 1;
        erase(&mut s, &mut std::io::stderr().lock());
    }
    Paused(shared)
}

impl Drop for Paused {
    fn drop(&mut self) {
        if let Some(shared) = &self.0 {
            let mut s = shared.lock().unwrap_or_else(PoisonError::into_inner);
            s.paused = s.paused.saturating_sub(1);
        }
    }
}
