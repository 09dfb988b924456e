import Foundation

/// TLS settings of one client, on top of the usual verification of the server's chain and host name (which
/// cannot be turned off).
///
/// Honoured by ``FMCurlTransport`` (Linux; the default transport there where libcurl loads, and the one
/// ``DataAPI/init(configuration:callbackQueue:tokenStore:logger:now:)`` picks whenever these options are set).
/// A transport that cannot honour an option set here fails every call with `-1001`
/// (``FMError/ClientCode/invalidConfiguration``) naming it: an option is never ignored silently.
public struct FMTLSOptions: Sendable, Equatable, CustomStringConvertible {
    /// A PEM bundle of certificate authorities trusted *instead of* the system store, for this client only
    /// (a private CA, or a self-signed FileMaker Server certificate). `nil`: the system store.
    public var caCertificates: URL?
    /// SHA-256 digests of the server's public key (its SubjectPublicKeyInfo), as curl writes them:
    /// `"sha256//BASE64"`. When not empty, the server's key must match one of them, on top of chain and host
    /// verification. `openssl x509 -in server.crt -pubkey -noout | openssl pkey -pubin -outform der |
    /// openssl dgst -sha256 -binary | base64` prints the BASE64 part.
    public var pinnedPublicKeys: [String]
    /// A PEM certificate this client presents when the server asks for one (mutual TLS).
    public var clientCertificate: URL?
    /// The PEM private key of ``clientCertificate`` (unencrypted); `nil` when the certificate file holds it.
    public var clientKey: URL?

    /// Creates TLS options; the defaults are the system's trust store, no pin and no client certificate.
    public init(caCertificates: URL? = nil, pinnedPublicKeys: [String] = [], clientCertificate: URL? = nil, clientKey: URL? = nil) {
        self.caCertificates = caCertificates
        self.pinnedPublicKeys = pinnedPublicKeys
        self.clientCertificate = clientCertificate
        self.clientKey = clientKey
    }

    /// Whether nothing is set (the system's trust store, no pin, no client certificate).
    var isDefault: Bool { self == FMTLSOptions() }

    /// The options that are set, by name (`caCertificates, pinnedPublicKeys`).
    var namesSet: [String] {
        var names: [String] = []
        if caCertificates != nil { names.append("caCertificates") }
        if !pinnedPublicKeys.isEmpty { names.append("pinnedPublicKeys") }
        if clientCertificate != nil { names.append("clientCertificate") }
        if clientKey != nil { names.append("clientKey") }
        return names
    }

    /// `FMTLSOptions(caCertificates: /path/ca.pem, pinnedPublicKeys: 1, clientCertificate: /path/c.pem, clientKey: set)`:
    /// paths and how many pins; never a key's content.
    public var description: String {
        Redaction.oneLine("FMTLSOptions(caCertificates: \(caCertificates?.path ?? "system"), pinnedPublicKeys: \(pinnedPublicKeys.count), "
            + "clientCertificate: \(clientCertificate?.path ?? "nil"), clientKey: \(clientKey == nil ? "nil" : "set"))")
    }
}
