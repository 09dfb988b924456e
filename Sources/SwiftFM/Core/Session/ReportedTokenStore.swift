import Foundation

/// A token store as SwiftFM calls it: through ``FMTokenStore/tryLoad()`` and ``FMTokenStore/trySave(_:)``, each failure
/// turned into the warning to log, once per distinct problem (the same one is not told again; a success forgets it, so
/// its return is told again), on one line, cut, and with the token redacted (a store's careless message may say it).
/// The Data API's session-token store (``SessionStage``) and a Claris ID sign-in's refresh-token store
/// (``ClarisIDSignIn``) both go through it; each says in its own ``Wording`` what a failure costs. It holds no lock
/// while the store runs: a store may block, throw, or call its client back.
final class ReportedTokenStore: Sendable {
    /// What a warning calls the store and says a failure costs:
    /// `STORE cannot write|clear|read LOCATION: REASON; COST`.
    struct Wording: Sendable {
        /// The store, as a warning names it (`the token store`).
        var store: String
        /// What a failed write costs.
        var write: String
        /// What a failed clear costs.
        var clear: String
        /// What a failed read costs.
        var read: String

        /// A Data API client's session-token store.
        static let session = Wording(
            store: "the token store",
            write: "the session is kept in memory only, so a restart logs in again",
            clear: "it still holds the token, which a later launch may try once",
            read: "the client logs in instead of using a stored token")

        /// A Claris ID sign-in's refresh-token store.
        static let refreshToken = Wording(
            store: "the Claris ID refresh-token store",
            write: "the refresh token is kept in memory only, so a restart signs in with the password again",
            clear: "it still holds the refused refresh token, which a later launch may try once",
            read: "the sign-in uses the password instead of a stored refresh token")
    }

    /// The store.
    let store: any FMTokenStore
    private let wording: Wording
    /// The last problems told, of a load and of a save.
    private let problems = Locked<(load: String?, save: String?)>((nil, nil))
    /// The token the store was last seen to hold (read or written): a store's message about a failed clear may say it,
    /// when nothing else holds it any more, so its warning hides it too.
    private let holds = Locked<String?>(nil)

    init(_ store: any FMTokenStore, wording: Wording) {
        self.store = store
        self.wording = wording
    }

    /// Writes `token` (`nil` clears the store): `nil` when it was written, or when the store could not and that problem
    /// was told last; else the warning to log (outside any lock).
    func save(_ token: FMStoredToken?) -> String? {
        let problem: String?
        do {
            try store.trySave(token)
            problem = nil
            holds.withLock { $0 = token?.token }
        } catch {
            problem = describe(error, hiding: [token?.token, holds.value].compactMap { $0 })
        }
        guard let problem = newProblem(problem, at: \.save) else { return nil }
        return token == nil ? "\(wording.store) cannot clear \(problem); \(wording.clear)"
            : "\(wording.store) cannot write \(problem); \(wording.write)"
    }

    /// The store's token (`nil` also when it could not be read), and the warning to log when it could not (once per
    /// problem).
    func load() -> (stored: FMStoredToken?, warning: String?) {
        let (stored, failure) = Self.read(store)
        return (stored, readWarning(stored, failure: failure))
    }

    /// `store`'s token, or why it could not be read (``FMTokenStore/tryLoad()`` threw; no token then).
    static func read(_ store: any FMTokenStore) -> (stored: FMStoredToken?, failure: (any Error)?) {
        do {
            return (try store.tryLoad(), nil)
        } catch {
            return (nil, error)
        }
    }

    /// The warning for a read of the store that gave `stored` or `failure`, unless it is the problem told last.
    func readWarning(_ stored: FMStoredToken?, failure: (any Error)?) -> String? {
        if let stored { holds.withLock { $0 = stored.token } }
        let problem = failure.map { describe($0, hiding: holds.value.map { [$0] } ?? []) }
        guard let problem = newProblem(problem, at: \.load) else { return nil }
        return "\(wording.store) cannot read \(problem); \(wording.read)"
    }

    /// `problem` when it is not the one told last at `which` (it is then the one told last); `nil` for no problem (the
    /// last one is forgotten: its return is told again).
    private func newProblem(_ problem: String?,
                            at which: WritableKeyPath<(load: String?, save: String?), String?>) -> String? {
        problems.withLock { told -> String? in
            defer { told[keyPath: which] = problem }
            return problem == told[keyPath: which] ? nil : problem
        }
    }

    /// What a store's error says, as a warning shows it: an ``FMTokenStoreError``'s location and reason, or the store's
    /// type and the error's description; on one line, cut, and without `tokens`.
    private func describe(_ error: any Error, hiding tokens: [String]) -> String {
        let text: String
        if let error = error as? FMTokenStoreError {
            text = "\(FMError.serverText(error.location, limit: 300)): \(FMError.serverText(error.reason, limit: 300))"
        } else {
            text = "(\(type(of: store))): \(FMError.serverText(String(describing: error), limit: 300))"
        }
        return Redaction.scrubCut(text, secrets: tokens)
    }
}
