//! Standard input and output for the language server without a thread
//! hop: where fd 0 or 1 is a pipe or a socket (what editors give a
//! language server), it is read and written non-blocking on the runtime's
//! own threads through the reactor, instead of through tokio's blocking
//! pool, which costs two thread wake-ups per message each way. On a
//! machine whose cores are busy re-indexing, each wake-up can wait a
//! scheduler slice, so fewer of them is a shorter tail for
//! `workspace/symbol` per keystroke.
//!
//! Owns: `PipeIo`. Never: touches an fd that is a terminal or a file (those
//! keep tokio's blocking stdio), or leaves `O_NONBLOCK` set on a stream
//! after the server is done with it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A pipe or socket end (a duplicate of fd 0 or 1) in non-blocking mode,
/// registered with the reactor. Dropping it restores the stream's flags.
pub struct PipeIo {
    fd: AsyncFd<OwnedFd>,
    /// The file status flags before `O_NONBLOCK` was set: the open file
    /// description is shared with the process that gave it to us.
    flags: libc::c_int,
}

impl PipeIo {
    /// fd 0 as a non-blocking reader, or `None` when it is not a pipe or a
    /// socket (or any step fails): then the caller keeps tokio's stdin.
    pub fn stdin() -> Option<PipeIo> {
        PipeIo::from_std(libc::STDIN_FILENO)
    }

    /// fd 1 as a non-blocking writer, or `None` (see `stdin`).
    pub fn stdout() -> Option<PipeIo> {
        PipeIo::from_std(libc::STDOUT_FILENO)
    }

    fn from_std(fd: RawFd) -> Option<PipeIo> {
        // SAFETY: fstat, dup and fcntl on a descriptor number; each result
        // is checked, and the duplicate is owned from here on.
        unsafe {
            let mut stat: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut stat) != 0 {
                return None;
            }
            let kind = stat.st_mode & libc::S_IFMT;
            if kind != libc::S_IFIFO && kind != libc::S_IFSOCK {
                return None;
            }
            let copy = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3);
            if copy < 0 {
                return None;
            }
            let owned = OwnedFd::from_raw_fd(copy);
            let flags = libc::fcntl(copy, libc::F_GETFL);
            if flags < 0 || libc::fcntl(copy, libc::F_SETFL, flags | libc::O_NONBLOCK) != 0 {
                return None;
            }
            // `owned` is open for as long as the `AsyncFd` holds it.
            match AsyncFd::register(owned) {
                Ok(fd) => Some(PipeIo { fd, flags }),
                Err(error) => {
                    libc::fcntl(copy, libc::F_SETFL, flags);
                    drop(error);
                    None
                }
            }
        }
    }
}

impl Drop for PipeIo {
    fn drop(&mut self) {
        // SAFETY: fcntl on the descriptor this value owns.
        unsafe {
            libc::fcntl(self.fd.as_raw_fd(), libc::F_SETFL, self.flags);
        }
    }
}

/// `Ok(n)` or the `errno` of a read/write result.
fn result(n: isize) -> io::Result<usize> {
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

impl AsyncRead for PipeIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let read = guard.try_io(|fd| {
                // SAFETY: reads at most `unfilled.len()` bytes into it.
                result(unsafe {
                    libc::read(fd.as_raw_fd(), unfilled.as_mut_ptr().cast(), unfilled.len())
                })
            });
            match read {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }
}

impl AsyncWrite for PipeIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.fd.poll_write_ready(cx))?;
            let written = guard.try_io(|fd| {
                // SAFETY: writes at most `data.len()` bytes from it.
                result(unsafe { libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()) })
            });
            match written {
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Ok(result) => return Poll::Ready(result),
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A pipe's two ends as `PipeIo`s, as if they were fd 0 and fd 1 (the
    /// originals close when this returns; the `PipeIo`s hold duplicates).
    fn pipe() -> (PipeIo, PipeIo) {
        let (reader, writer) = std::io::pipe().expect("pipe");
        (
            PipeIo::from_std(reader.as_raw_fd()).expect("a pipe is accepted"),
            PipeIo::from_std(writer.as_raw_fd()).expect("a pipe is accepted"),
        )
    }

    #[tokio::test]
    async fn moves_more_than_a_pipe_holds_and_sees_the_end() {
        let (mut reader, mut writer) = pipe();
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        let sent = data.clone();
        let send = tokio::spawn(async move {
            writer.write_all(&sent).await.expect("write");
            drop(writer);
        });
        let mut got = Vec::new();
        reader.read_to_end(&mut got).await.expect("read");
        send.await.expect("writer task");
        assert_eq!(got, data);
    }

    #[test]
    fn a_regular_file_is_left_to_blocking_stdio() {
        let file = tempfile::tempfile().expect("temp file");
        assert!(PipeIo::from_std(file.as_raw_fd()).is_none());
    }

    #[tokio::test]
    async fn dropping_restores_blocking_mode() {
        let (reader, _writer) = std::io::pipe().expect("pipe");
        // SAFETY: F_GETFL on a descriptor `reader` keeps open.
        let nonblocking =
            || unsafe { libc::fcntl(reader.as_raw_fd(), libc::F_GETFL) } & libc::O_NONBLOCK;
        let io = PipeIo::from_std(reader.as_raw_fd()).expect("a pipe is accepted");
        assert_ne!(nonblocking(), 0);
        drop(io);
        assert_eq!(nonblocking(), 0);
    }
}
