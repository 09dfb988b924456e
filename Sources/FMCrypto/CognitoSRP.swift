// The arithmetic of Amazon Cognito's USER_SRP_AUTH (SRP-6a over RFC 5054's 3072-bit group, SHA-256),
// shared by the SwiftFM client and the emulator's Cognito. The flow and the wire are elsewhere.

/// Cognito's SRP-6a: the group, the hashes, the password key and the claim signature.
package enum CognitoSRP {
    /// RFC 5054's 3072-bit prime (appendix A).
    package static let N = BigUInt(hex: """
        FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD\
        EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED\
        EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF0598DA48361C55D39A69163FA8FD24CF5F\
        83655D23DCA3AD961C62F356208552BB9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B\
        E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF6955817183995497CEA956AE515D2261898FA0510\
        15728E5A8AAAC42DAD33170D04507A33A85521ABDF1CBA64ECFB850458DBEF0A8AEA71575D060C7DB3970F85A6E1E4C7\
        ABF5AE8CDB0933D71E8C94E04A25619DCEE3D2261AD2EE6BF12FFA06D98A0864D87602733EC86A64521F2B18177B200C\
        BBE117577A615D6C770988C0BAD946E208E24FA074E5AB3143DB5BFCE0FD108E4B82D120A93AD2CAFFFFFFFFFFFFFFFF
        """) ?? .zero
    /// The generator, 2.
    package static let g = BigUInt(2)
    /// Montgomery arithmetic modulo ``N`` (set up once).
    package static let group = MontgomeryContext(modulus: N)
    /// k = H(padHex(N) ‖ padHex(g)).
    package static let k = BigUInt(bytes: SHA256.hash(padded(N) + padded(g)))

    /// The bytes of Cognito's `padHex`: big-endian, at least one byte, with a leading zero byte when the
    /// top bit is set (a positive two's-complement number).
    package static func padded(_ value: BigUInt) -> [UInt8] {
        let raw = value.bytes
        guard let first = raw.first else { return [0] }
        return first >= 0x80 ? [0] + raw : raw
    }

    /// `base ^ exponent mod N`.
    package static func power(_ base: BigUInt, _ exponent: BigUInt) -> BigUInt {
        group?.power(base, exponent) ?? .zero
    }

    /// The part of a pool id after `_` (`us-west-2_NqkuZcXQY` → `NqkuZcXQY`): what Cognito signs with.
    package static func poolName(_ userPoolID: String) -> String {
        guard let underscore = userPoolID.firstIndex(of: "_") else { return userPoolID }
        return String(userPoolID[userPoolID.index(after: underscore)...])
    }

    /// u = H(padHex(A) ‖ padHex(B)).
    package static func u(A: BigUInt, B: BigUInt) -> BigUInt {
        BigUInt(bytes: SHA256.hash(padded(A) + padded(B)))
    }

    /// x = H(padHex(salt) ‖ H(poolName ‖ userID ‖ ":" ‖ password)).
    package static func x(salt: BigUInt, poolName: String, userID: String, password: String) -> BigUInt {
        let inner = SHA256.hash(Array("\(poolName)\(userID):\(password)".utf8))
        return BigUInt(bytes: SHA256.hash(padded(salt) + inner))
    }

    /// A = g^a mod N.
    package static func publicKey(secret a: BigUInt) -> BigUInt { power(g, a) }

    /// 128 random bytes as an integer (the client's secret `a`, or the server's `b`), never zero mod N.
    package static func randomSecret() -> BigUInt {
        var generator = SystemRandomNumberGenerator()
        while true {
            let words = (0..<16).map { _ in generator.next() as UInt64 }
            let value = BigUInt(limbs: words)
            if !value.isZero { return value }
        }
    }

    /// The 16-byte key: HKDF(ikm = padHex(S), salt = padHex(u), info = "Caldera Derived Key").
    package static func derivedKey(S: BigUInt, u: BigUInt) -> [UInt8] {
        HMACSHA256.hkdfOneBlock(ikm: padded(S), salt: padded(u), info: Array("Caldera Derived Key".utf8), length: 16)
    }

    /// The client's key, or `nil` when the server's values are unusable: B outside 1..<N (SRP's check that
    /// B ≢ 0 mod N, made before any arithmetic, so that a huge B costs nothing) or u = 0.
    package static func clientKey(a: BigUInt, A: BigUInt, B: BigUInt, salt: BigUInt, poolName: String,
                                  userID: String, password: String) -> [UInt8]? {
        guard !B.isZero, B < N else { return nil }
        let u = u(A: A, B: B)
        guard !u.isZero else { return nil }
        let x = x(salt: salt, poolName: poolName, userID: userID, password: password)
        let kgx = (k * power(g, x)) % N
        let base = B >= kgx ? B - kgx : (B + N) - kgx
        let S = power(base, a + u * x)
        return derivedKey(S: S, u: u)
    }

    /// The verifier v = g^x the server stores for a password.
    package static func verifier(salt: BigUInt, poolName: String, userID: String, password: String) -> BigUInt {
        power(g, x(salt: salt, poolName: poolName, userID: userID, password: password))
    }

    /// The server's B = k·v + g^b mod N.
    package static func serverPublicKey(b: BigUInt, verifier v: BigUInt) -> BigUInt {
        (k * v + power(g, b)) % N
    }

    /// The server's key, or `nil` when the client's A is unusable (A ≡ 0 or u = 0).
    package static func serverKey(b: BigUInt, B: BigUInt, A: BigUInt, verifier v: BigUInt) -> [UInt8]? {
        guard !(A % N).isZero else { return nil }
        let u = u(A: A, B: B)
        guard !u.isZero else { return nil }
        let S = power((A * power(v, u)) % N, b)
        return derivedKey(S: S, u: u)
    }

    /// PASSWORD_CLAIM_SIGNATURE's bytes: HMAC(key, poolName ‖ userID ‖ secretBlock ‖ timestamp).
    package static func claimSignature(key: [UInt8], poolName: String, userID: String, secretBlock: [UInt8], timestamp: String) -> [UInt8] {
        HMACSHA256.authenticationCode(key: key, message: Array(poolName.utf8) + Array(userID.utf8) + secretBlock + Array(timestamp.utf8))
    }
}
