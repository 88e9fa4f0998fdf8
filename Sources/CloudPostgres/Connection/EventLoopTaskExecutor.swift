import NIOCore

/// Runs a Swift task's jobs on one NIO event loop instead of Swift's
/// cooperative pool.
///
/// postgres-nio offers `COPY … FROM STDIN` only as an `async` function. The
/// blocking API must not start a task on the cooperative pool and wait for it:
/// on a two-core machine that pool has two threads, and when both are
/// blocked waiting (two tests, two server requests) the task never runs. A
/// task whose executor preference is this executor runs every nonisolated
/// part of it, and resumes after each suspension, on the connection's own
/// event loop, which never blocks, so a thread waiting for it (with
/// `EventLoopFuture.wait()`) always sees it finish.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }

    /// Runs `operation` as a task on the event loop; the future completes
    /// with what it returned or threw. A thread other than the event loop's
    /// may block waiting for it.
    func future<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) -> EventLoopFuture<T> {
        let promise = eventLoop.makePromise(of: T.self)
        Task(executorPreference: self) {
            do {
                promise.succeed(try await operation())
            } catch {
                promise.fail(error)
            }
        }
        return promise.futureResult
    }
}
