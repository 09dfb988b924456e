import Foundation
import FMCrypto

/// The emulator's RS256 signing key for the ID and access tokens its Cognito issues (a fixed RSA-2048
/// test key, made for the emulator and published with it: the tokens prove nothing outside tests).
/// Clients that verify tokens (pycognito) read the public half from `/{poolId}/.well-known/jwks.json`.
enum EmulatorTokenKey {
    static let keyID = "swiftfm-emulator-rs256-1"
    static let n = BigUInt(hex: "aec1540f23adaa6064fc6ef709d0baea2645e61ff9984fb5f43c953f001be1a40023a65b42c1682af9265c904563fba3a03f9e692b8f365f61fb746e5a71ecfd59f0eac7bbfb5e3c0f20e48f82bad3f2b77c2533530f5dc8626581b500e48b8cfd1269310054693c1f097bd6160cb1a5a5e9d8ac993b651451d750d5e36386fca5ff73e4f0492cc8cced35b7f6a7b080a68c5226bb4a30143248949752484dd90ece2a1c14b21cb742cb503758c559c214cd49fef81b1a5c1975ef49ac89e59929883e31fa2fc397609d8c2a26cc5075eb7e10e0b7a85f0dc12ff24ea3819d1c5562e7c16ad404f6928bd3e53c22bf3ca81b22632c4a532b7b5801d8969ebf73") ?? .zero
    static let p = BigUInt(hex: "e4a90e880a784f28aa16841b5fd7e5cf23c31a7ccb026581b297b9e12e36a71b4bbf19fc7fd8912345df8a1229ae9d0145d489cb0265cc21faba274fd54a07a2ff741abd317110ebbe695d40d93ade7a91e83b570912b02b385844064c270973fd38714f9589124cf6f5aaeb788123c28469b93c9901618597c60b9c6330a5d1") ?? .zero
    static let q = BigUInt(hex: "c3a6510526b9a332ebb29420fda3797b6c960b14960187a021c50bb1fd30de02d8104b3a7a293fe5b51a825e6525ccea143dee0b83a383f4c1504b78dae4c7cbe9a216a765e42b4a5fa7c50166e8f2e026c4bced96957a78b1df037ecf5d63dc94e1e217ec1b160eddf5d2fd1e526ce3fbf33ccd583ca759144cb8b6933d6e03") ?? .zero
    static let dp = BigUInt(hex: "a40ebb9355d7be0bd20537a1a06179cbe5bfbd085e6b88c2c68d5fdb355a1709598e72299cdc983db38b5037f9da0361ff651fbc1d2b468bf6a58b411729f752b66fea23660ed6721dfae0e27f396298948907d2497b3414be676ddf0ad25350fa147e0ff89d111951732fbfa4851b501bcaf3118c41d663906292c010d6bd91") ?? .zero
    static let dq = BigUInt(hex: "33408e58db1c263460aa1743cd2dd5d50f4cfefa1591b105b1d2fc8d53d6495255676f4d9252dbfa40c700ffd95f5d9eb44ec4dd1f4ee6726771b153a783e712f3d1123e27e2edb43dfaa51108f45d2b7afc6ec18e80f9e4443437a6308c366cc253a9f6ba531e2426e10eb4600d1799619706868466df2fe6b17271e1806621") ?? .zero
    static let qInverse = BigUInt(hex: "99c6bf8e3a477f4a1e30d36dbe2c3d7cbdf4b2b9c1892217baeeaeee43004353e6920c0791620c7219ef7be9748fc140e61ff63f67a17f0c05fe01dd24969dcc3247ec217e4f3f41a83b84cb253f21163bd201ec0f33a0ff4c73665aced60d88fcdcd6daf139b207d1eddf96cf4a1608815bd4207b04f22de9bbbd01083eed78") ?? .zero
    static let pContext = MontgomeryContext(modulus: p)
    static let qContext = MontgomeryContext(modulus: q)

    /// The JWKS document (one RSA key).
    static var jwks: [String: Any] {
        ["keys": [["kid": keyID, "alg": "RS256", "kty": "RSA", "use": "sig", "e": "AQAB", "n": base64URL(n.bytes)]]]
    }

    /// RSASSA-PKCS1-v1_5 with SHA-256 over `message` (CRT).
    static func sign(_ message: [UInt8]) -> [UInt8] {
        // EM = 00 01 FF… 00 ‖ DigestInfo(SHA-256) ‖ H(message), 256 bytes.
        let digestInfo: [UInt8] = [0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20]
        let t = digestInfo + SHA256.hash(message)
        let em = [0x00, 0x01] + [UInt8](repeating: 0xff, count: 256 - 3 - t.count) + [0x00] + t
        let m = BigUInt(bytes: em)
        guard let pContext, let qContext else { return [] }
        let s1 = pContext.power(m, dp), s2 = qContext.power(m, dq)
        let difference = s1 >= s2 % p ? s1 - s2 % p : s1 + p - s2 % p
        let h = (qInverse * difference) % p
        return (s2 + h * q).bytes(paddedTo: 256)
    }

    /// Base64url without padding (JWT's encoding).
    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
