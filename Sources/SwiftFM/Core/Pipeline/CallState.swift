import Foundation

/// The phase of one call, and the one place where it ends: a pure state machine, no lock, no side effect.
///
/// Every stage reports what happened to the call as an ``Event``; ``handle(_:)`` moves the phase and returns
/// the ``Action``s the caller carries out, outside its lock, in the order given. The call ends (``Phase/done``)
/// exactly once, whichever comes first — the answer, a cancel, the deadline, a shutdown — and only that
/// transition delivers the result, so the completion runs exactly once on every path.
///
/// The machine holds what the call holds: its place in the pool's queue, its session lease, the work it
/// handed to the send stage (places in the rate-limit and concurrency queues, the exchange) and its timers.
/// Whatever an event hands it is either kept in the new phase or handed straight back (a lease that arrives
/// after the call ended is released, a place in a queue withdrawn, an exchange stopped, a timer cancelled),
/// and ending gives back everything kept: a call cannot end holding a session.
///
/// Generic over what it holds, so the tests drive every (phase, event) pair with plain values:
/// `Lease` is a session lease, `Work` something the send stage can stop, `Timer` a timer it can cancel.
struct CallState<Value, Lease, Work, Timer> {
    /// Where the call is.
    enum Phase {
        /// Admitted, and about to start an attempt (first, replayed after a lost session, or after a back-off).
        case queued
        /// In the session pool's queue, under this id.
        case waitingForSession(UInt64)
        /// Handed to the send stage, with the session it uses (none for Basic, explicit-token and
        /// session-less calls) and the work it has queued or running there.
        case inFlight(lease: Lease?, work: [Work])
        /// Waiting before the next attempt; the timer is `nil` until it is armed.
        case backingOff(Timer?)
        /// Ended: its result was delivered.
        case done
    }

    /// What happened to the call.
    enum Event {
        /// The call was admitted: its first attempt starts.
        case started
        /// The call's deadline timer is running.
        case deadlineArmed(Timer)
        /// Attempt number `attempt` joined the session pool's queue under `id`. Reported after the pool
        /// returns, so it may come after that attempt was served, failed or even followed by the next one: a
        /// report of an earlier attempt changes nothing (its place, if any, is withdrawn).
        case leaseRequested(UInt64, attempt: Int)
        /// The pool handed the call a session.
        case leased(Lease)
        /// The call needs no pool session (no auth, Basic, an explicit token): it goes straight to the send stage.
        case noSessionNeeded
        /// The send stage queued or started `work` for attempt number `attempt` (0: a call that never starts
        /// attempts, a ``OneShot``). Reported after the work was handed on, so it may come after that attempt's
        /// outcome moved the call on: work of an earlier attempt is stopped (it has ended by then) and never
        /// becomes the current attempt's.
        case sent(Work, attempt: Int)
        /// The outcome is decided: the answer, or a failure that is not retried.
        case answered(Result<Value, FMError>)
        /// The session the call waited for could not be opened, and the failure is not retried.
        case loginFailed(FMError)
        /// The server no longer knows the call's session; `mayReplay`: the call may be sent once more on a
        /// renewed session (it cannot have run, and the pool is not pinned).
        case sessionLost(FMError, mayReplay: Bool)
        /// A transient failure the retry policy retries after `wait` seconds.
        case backOff(wait: TimeInterval)
        /// The timer of back-off number `backoff` (``CallState/backoffs`` when it was armed) is running.
        case backoffArmed(Timer, backoff: Int)
        /// Back-off number `backoff` is over: the next attempt starts. A report of an earlier back-off (its
        /// timer fired late, or its arming was reported after it fired and the call moved on) changes nothing.
        case backoffEnded(backoff: Int)
        /// The caller cancelled (`-1005`).
        case cancelled
        /// The call's deadline passed: `error` is its `-1004`, naming the host and port.
        case deadlinePassed(FMError)
        /// The client shuts down and the grace is over (`-1012`).
        case shutdown(FMError)

        /// Whether this is ``deadlinePassed(_:)`` (read without taking the event).
        var isDeadline: Bool {
            if case .deadlinePassed = self { return true }
            return false
        }
    }

    /// What the caller carries out, in order, outside its lock.
    enum Action {
        /// Start attempt number `attempt`: ask the pool for a session (at the front of the queue after a lost
        /// session), or send.
        case startAttempt(front: Bool, attempt: Int)
        /// Send attempt number `attempt`, with this session (`nil`: the call's own authorization).
        case send(Lease?, attempt: Int)
        /// Arm the timer of back-off number `backoff`; it reports ``Event/backoffArmed(_:backoff:)`` and, when
        /// it fires, ``Event/backoffEnded(backoff:)``, both with that number.
        case armBackoff(TimeInterval, backoff: Int)
        /// Cancel a timer.
        case cancelTimer(Timer)
        /// Leave the session pool's queue.
        case withdrawFromPool(UInt64)
        /// Give a session back to the pool.
        case releaseLease(Lease)
        /// The call ended: it leaves the client's registry of calls in flight (the shutdown waits for it).
        case unregister
        /// Deliver the call's result to the caller.
        case deliver(Result<Value, FMError>)
        /// Stop work of the send stage: leave its queue, or cancel the exchange with this error. After the
        /// delivery, so the caller hears the result before the transport is told.
        case stop(Work, FMError)
    }

    private(set) var phase: Phase = .queued
    /// The attempts started so far (the first one included).
    private(set) var attempts = 0
    /// `true` once the call was replayed after a lost session (at most once); later attempts lease at the front.
    private(set) var replayed = false
    /// The back-offs started so far: each timer's reports carry its number, so a late report of an earlier
    /// back-off never arms, cancels or ends the current one.
    private(set) var backoffs = 0
    private var deadline: Timer?

    /// `true` once the call ended.
    var isDone: Bool {
        if case .done = phase { return true }
        return false
    }

    /// Moves the phase for `event` and returns what to carry out.
    mutating func handle(_ event: Event) -> [Action] {
        if case .done = phase { return handBack(event) }
        switch event {
        case .started:
            guard case .queued = phase, attempts == 0 else { return [] }
            return [startAttempt()]
        case .deadlineArmed(let timer):
            if let old = deadline { deadline = timer; return [.cancelTimer(old)] }
            deadline = timer
            return []
        case .leaseRequested(let id, let attempt):
            guard attempt == attempts else { return [.withdrawFromPool(id)] }
            // In any other phase the pool answered already, before its queue id came back.
            guard case .queued = phase else { return [] }
            phase = .waitingForSession(id)
            return []
        case .leased(let lease):
            switch phase {
            case .queued, .waitingForSession:
                phase = .inFlight(lease: lease, work: [])
                return [.send(lease, attempt: attempts)]
            case .inFlight, .backingOff, .done:
                return [.releaseLease(lease)]
            }
        case .noSessionNeeded:
            guard case .queued = phase else { return [] }
            phase = .inFlight(lease: nil, work: [])
            return [.send(nil, attempt: attempts)]
        case .sent(let work, let attempt):
            guard attempt == attempts else { return [.stop(work, .cancelled)] }
            switch phase {
            case .queued:
                phase = .inFlight(lease: nil, work: [work])
                return []
            case .inFlight(let lease, var held):
                phase = .done   // drops the phase's reference, so the append does not copy
                held.append(work)
                phase = .inFlight(lease: lease, work: held)
                return []
            case .waitingForSession, .backingOff, .done:
                return [.stop(work, .cancelled)]
            }
        case .answered(let result):
            return end(result, stopping: false)
        case .loginFailed(let error):
            return end(.failure(error), stopping: false)
        case .sessionLost(let error, let mayReplay):
            guard case .inFlight(let lease, _) = phase, mayReplay, !replayed else {
                return end(.failure(error), stopping: false)
            }
            replayed = true
            phase = .queued
            return (lease.map { [.releaseLease($0)] } ?? []) + [startAttempt()]
        case .backOff(let wait):
            switch phase {
            case .inFlight(let lease, _):
                phase = .backingOff(nil)
                backoffs += 1
                return (lease.map { [.releaseLease($0)] } ?? []) + [.armBackoff(wait, backoff: backoffs)]
            case .queued, .waitingForSession:
                // The login failed transiently: the pool has already let the call go.
                phase = .backingOff(nil)
                backoffs += 1
                return [.armBackoff(wait, backoff: backoffs)]
            case .backingOff, .done:
                return []
            }
        case .backoffArmed(let timer, let backoff):
            // Not the current back-off's timer, or it fired already: it has nothing left to do.
            guard backoff == backoffs, case .backingOff(.none) = phase else { return [.cancelTimer(timer)] }
            phase = .backingOff(timer)
            return []
        case .backoffEnded(let backoff):
            guard backoff == backoffs, case .backingOff = phase else { return [] }
            phase = .queued
            return [startAttempt()]
        case .cancelled:
            return end(.failure(.cancelled), stopping: true)
        case .deadlinePassed(let error):
            return end(.failure(error), stopping: true)
        case .shutdown(let error):
            return end(.failure(error), stopping: true)
        }
    }

    private mutating func startAttempt() -> Action {
        attempts += 1
        return .startAttempt(front: replayed, attempt: attempts)
    }

    /// The one exactly-once transition: gives back everything the call holds, then delivers `result`.
    /// `stopping`: the call ends early (cancel, deadline, shutdown), so its work in the send stage is stopped.
    private mutating func end(_ result: Result<Value, FMError>, stopping: Bool) -> [Action] {
        var actions: [Action] = []
        if let deadline { actions.append(.cancelTimer(deadline)) }
        var work: [Work] = []
        switch phase {
        case .queued, .done: break
        case .waitingForSession(let id): actions.append(.withdrawFromPool(id))
        case .inFlight(let lease, let held):
            if let lease { actions.append(.releaseLease(lease)) }
            work = held
        case .backingOff(let timer):
            if let timer { actions.append(.cancelTimer(timer)) }
        }
        phase = .done
        deadline = nil
        actions.append(.unregister)
        actions.append(.deliver(result))
        if stopping, case .failure(let error) = result {
            for item in work { actions.append(.stop(item, error)) }
        }
        return actions
    }

    /// After the end: what an event hands in goes straight back; nothing else happens.
    private func handBack(_ event: Event) -> [Action] {
        switch event {
        case .deadlineArmed(let timer), .backoffArmed(let timer, _): [.cancelTimer(timer)]
        case .leaseRequested(let id, _): [.withdrawFromPool(id)]
        case .leased(let lease): [.releaseLease(lease)]
        case .sent(let work, _): [.stop(work, .cancelled)]
        case .started, .noSessionNeeded, .answered, .loginFailed, .sessionLost, .backOff, .backoffEnded,
             .cancelled, .deadlinePassed, .shutdown: []
        }
    }
}
