import Foundation
import Testing
import TestSupport
@testable import FMCrypto

// The Claris ID sign-in's arithmetic is right: SHA-256, HMAC, HKDF and big integers against published known
// answers, the SRP group's constants, a client and a server that agree, Montgomery powers against square-and-multiply.

private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
private func bytes(hex: String) -> [UInt8] { BigUInt(hex: hex).map { $0.bytes(paddedTo: hex.count / 2) } ?? [] }

/// SHA-256 against FIPS 180-4's examples (NIST CSRC "SHA256.pdf", "SHA2 additional").
@Test func sha256KnownAnswers() {
    #expect(hex(SHA256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    #expect(hex(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    #expect(hex(SHA256.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    #expect(hex(SHA256.hash(Array("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu".utf8)))
            == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    var million = SHA256()
    for _ in 0..<1000 { million.update([UInt8](repeating: UInt8(ascii: "a"), count: 1000)) }
    #expect(hex(million.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    // Padding edges: 55, 56, 63 and 64 bytes fed in one piece or byte by byte agree.
    for length in [55, 56, 63, 64, 65, 119, 120] {
        let message = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var piecewise = SHA256()
        for byte in message { piecewise.update([byte]) }
        #expect(piecewise.finalize() == SHA256.hash(message))
    }
}

/// HMAC-SHA256 against RFC 4231 test cases 1, 2 and 6.
@Test func hmacKnownAnswers() {
    #expect(hex(HMACSHA256.authenticationCode(key: [UInt8](repeating: 0x0b, count: 20), message: Array("Hi There".utf8)))
            == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
    #expect(hex(HMACSHA256.authenticationCode(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8)))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    #expect(hex(HMACSHA256.authenticationCode(key: [UInt8](repeating: 0xaa, count: 131),
                                              message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
}

/// HKDF-SHA256 against RFC 5869 test cases 1 and 3 (the first block of their OKM).
@Test func hkdfKnownAnswers() {
    let ikm = [UInt8](repeating: 0x0b, count: 22)
    #expect(hex(HMACSHA256.hkdfOneBlock(ikm: ikm, salt: Array(0...12), info: Array(0xf0...0xf9), length: 32))
            == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf")
    #expect(hex(HMACSHA256.hkdfOneBlock(ikm: ikm, salt: [], info: [], length: 32))
            == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d")
    #expect(HMACSHA256.hkdfOneBlock(ikm: ikm, salt: [], info: [], length: 16).count == 16)
}

/// Modular powers, products and remainders against Python's integers (values pinned).
@Test func bigIntegerKnownAnswers() throws {
    let powers: [(String, String, String, String)] = [
        ("125d998017f5e2fc574dad2986ce834960", "c41f9dfd2cb85f3f", "ea06e9ab85a0bcc1", "be12ac740ee0806a"),
        ("bfd0b0090d625909923fb81d2706e55426eae0d2c11c339464", "380690847dc159e6a409c38f26b68b48e", "3a950666d8a4996efb447c0ceb48438b5", "6f5f3867a8a00f3ef9b3f943e257d492"),
        ("54c63d6f69947feaa35ff4cb507a2c3b72f5a2224a0ce02d285ac9cd0ebd27b4f2c0855ac9e599e3580d3a2dc6925b1ec95f4807bc6ecace3c0490ca26561d2417eb837ba8818dced3d0398c72689edcd6cfec9e2caebf999324405d969995d8aaff0f3b81a3e2889c795e846bdbd5f6d2f09529af81dda9da14f5079168e06b0c4f27b35c", "2b51a20dc3590ad570eaa1a8c34ebf6be1a897b98f400b49322125fd8ae6d747b48db0eb42887b5f5f8e384a7bd422051f9a98f4d0bf5da6cc3157e672468629e8c95613ef1071e6da44673e230ee06e0b5c15cfd1f515f75186e415243fa244adf517a77536be6e688e8b88c21df995313d2b9a3667cc1752de27660b", "91a386a3a0b730d88fe1e8a4aa1f9db8dd8a3b09dd54bec7d835c33744af929a91f4873115cd425ec38f1389998869510db4a02517e1ff83ab26a2658f32521553e014be00caa7e9bfd00724a123cf493f0febddf88d1a6bffff9a39142335e9e266cea9fab969ec07f1f83a79af371d87d8a8f065a3f96f0e51436d1f", "60b38b74a5c19a39ed03143e31a0c0b3c1cac992cab0010eceb5fbb053ea35d2762aa734f55835c01668e2e6160b06c2e13a4dd6f4f9e823aca020c8c1ccde591166662f63234a094e95c266b423e87b22ac9b7add15b2bf2d12780d6c828d93e9974cf87a39a5994abf9c75a6b9c63359dbdda5c44c9b642cdff3eb37"),
        ("390dbe6bc16c34cf6c84fa49ef91612c4e93f8d5a3be97c0e1f627c0200743c7f899210c635d352450f8421fc13055291bd1d2a80d51787cb17ba217043aa3c05e37f83844c071853275985078f7a6975613d07a7071ef624ea0768bb88402cc0d686b4c8f8dd1e2d338f40afe7c8a1d56d30f0290648c8fa9961ec5f97c9fd32ce3405e87b990dea60c996e734b94bd74cd26be6629d52d7a9373452a43e5eca6f539e15e8843a942399568613de05552fab3520fa2f1d7488b04422515cc9e1d8ac9b7621334518f7af1f5a66757bf9bff41dda5a84ebb83402373eed6c500f44fd46da3c55e0334b0fb0baf17c13b146b436ce7ed0ba7552954cac80ca84ac850eff308cf8f95c3", "b304fd51aac9bf6e84835c65193a0d264465583b0d42e3ad361469ba54291223c081a022565c353c77a5c205e6c53a57d389b97c02188571fce0ee7b2f1d8f88436ff95f4b5320d40318fcff73eb0ab47994c5ba8ca3b38a8947e38b231d0b90811704eddb0c7b9f721012ae76b0de6f730a94692dc2aa9fc3d67ad68db03a46b435deeee60c427193614239f1347133312cc39d02b09ec585f767f91b02d1f584c5590417eaa854976d21c172f569455b03140c6f0e9e6a4da8058e36083a3ec1396b97f8f8b021ff8353f92c12da355e323b71503fa0759cebf55d3b2951af8e4cd2e1f6ef218fee048fc02b4afd54941e17cef6e0d40d5428b803d51012f6", "d0c5238ceb914b43e3c44e83ce1045414e1c7a4189776347f9288931d78ee74f0cdbbb62365f2c2ce849dddd1c43af35ad22a5cd269aed1df5fd749b405cf5d4fed259c33215ff4f2eebdd04643e2ec8d10322399713d85bfa843e7cf5b67503f391361abb4cca3e7c21ab0d672bd7e9236dac08af9d96348676b326906e6a679efd9ce2054a108a7c22ca48e8f8746db71e77b2fc9e4dc6bf89b6551335276b42114abf4f4e45b432c3233dba9eba350dd00e8fa212f8fc794baead45c2c169bea12ba57797b9dc04eb48705916ca58fd9399c0c0d644210cf5ce20027fd9eb55c9dfdb45c7a738c84b75db940e6e2b932d838de8b6e53d1817d0235502bfbd", "bb272dff564efeb329f4f5ea6e3074a45f06a03bbb6fe8f13f56f6b902ecb3ccc5bbbd6d552ed8b41834ff8a2c7ec33682526af2969ebc9510f7c43c290a036226234a8a59c31c8038839d375cb16f1dc7045b4790c7feaf99a05be4934f31ab5ac197df9c6809c1972762a98c0c12dabdca765d2984e8fd38129b1f72ef10b5fdf92b75c07e9cd6fe7042d3f2699d4042405163567e48764d26aa38b23b36d2cd64db582bf1c8317a46e98f494f6656c20ea65947694aca828eebcbb8ef8d101077618375e44e3d8cf5d25aceea25de568eb81f675235a9332d2f1ec3ee1098d4bb8624a32a7e8388f9d2a0663b55efab1ac51d294f1ee977f54b9d1cd432f6"),
    ]
    for (base, exponent, modulus, expected) in powers {
        let value = try #require(BigUInt(hex: base)).power(try #require(BigUInt(hex: exponent)), modulus: try #require(BigUInt(hex: modulus)))
        #expect(value.hex == expected)
    }
    let (x, y, product, remainder, z) = ("36b06a20d1a0325d9630227b9a2e7133474ab9af53ce084f7e0dfe6ba4ea41ae51ffaf12de56473ffe7acb414484121fe80723714a47a94886f6f2d263d0e27e9577c5ec77271b3e461d13d64949a189d34a422093ad5e55913a7f1e1206c15257466d534c031148ea8e24dd78bba7bb17d748a05e1edf089523bccb448666d4a07620bfdf1a09c1f3e4ba14b6ee5e56d9da9dfea02891c00a6ca88697d30201e89b18e9b6181667d0cba56aa940eaf9ae7b95ffb1bc84d1d05eef94ce94938b320a7ff0aa617158e98fca5b5da72d44f9b14343289d7889e8520ef971e7e7302600ff0f5054798a072ef6bd03a1c00eefc93ff4bf00796d98835c1f6bd5a4cb401a2e66650bc5d9baa3fe07a99078a638acdcde09e0f938d87192ec8c2d23c2602600d23e7c4f895daa8f74928ae406b2526efc3c179ad65fb50ed1eb95bbe89a1ce1c72dd93219439735c7aec41cfe3b3a80343ce95d9cbce8994d296c8ce7f524d3b5d2069378c221be1ce1575f070e722803ea86d8", "8c19cbe6d513ea73c522402c72c768f26a32eb0b62cd3a6e6f77a752b2b62523c7510489de2507d10db8006683a8bb7eedfb0d6f4e9c81d4814d373e189e1b6df880909cd9c61a67e40bf21512d7142ef9174f488e81a3096225b522a1a90e1248526a88f291ee0a9caae0b27765140e6683f70c297ce1b9abb6ced85f88b24c7f0b37b6370bd5de5bfce2d872feec57001bd396f96b697154d9e504b3774fac8df79d126d2cbc792709db3c98878b9f995f738fc071c94813de839", "1dedfcd384047d61a25c0bb137ee893baaa4a8d967971891af68fe6225f13779e80d37e6397ac0237a958ef46b7063db31713cb49d55453524b5723af3bd7b01af6b38c1ce4420dae65504368e1a5f7497e936a483f5a53925ad14b17b60efdc58fab1c4f987955b19d5af5fd87d45bf3f489123d4749b970aef091df92cfce212c647babf54f854f1d642d8acbb7dcf2568dc18437f40494b3c4a6e8cd7fac4402661536d27d42cbba9467da96d7d5572de8f0db8c0032848b3f6f8f9ba319b5abd921657164c8a6ee3c651cda3a813dd563b057a290f2d39e236aa0cdcd2fd1dce78bd9c2d5368a825b4e487d4f3231a21786170269740e50fc226d3d5e92031e5944378c099ac42dd1548b52c18949834d248ec478c998084b83ed5939459719b5e3faff351c6814b83502ab0f546e02e11e1f182dd5e4f77b96b51a0f61c3fe928ce0be7c940d100f88e39fdeafdfedfeb63eba44a8db1134f2148c8d1151eae999f5540d93687185d05250f67b02e4f4577090008fe4d4ed25ecaa523b76333ff12c2a68f2e1c0c49f5f573515de7364255fd68e1a587d4ac886b6481f79ec2d9b0a00839345e6c8ac5f2a0903ae37f0cdce6d6e6edb09ad3383dea236533939dbc49df8905e13e33106ad9e1e92cd42617b538f9667cae3c04cb623fe158a4ee6ab77fdfe20c1ced545d85189b79d3760585ba8510e5cf90eaafc7dfdd5f6a515074c13329c9b9ced00697b8f00f50890408903a632ce06c0ee0dee837ece0ec5e038fc3c76c77b416b602a62e3c618", "e330d96d474d1c6dfb9d760c11c7d785799dfb802c52e2acc81b58929625d49df0630bba655b9d9bd18a5151e1c0ffdb3f91b6bde31098423ed22a4eee55fa0ecc6a552adb574b1fbc93f05b2a4d35703723a11ae26ae3", "13acfa07e22778455c2941d1f573ebaa2ae0e9001cb9d375f596e4230e6aed7809b8a12402a3cc47ee7e2fd3e1b235af04cea6b49e6b1ee20e5bfb4cc9f7e768078e6e4c016e37771752953c210c9b68a5fbfc5525a61b3")
    let bx = try #require(BigUInt(hex: x)), by = try #require(BigUInt(hex: y)), bz = try #require(BigUInt(hex: z))
    #expect((bx * by).hex == product)
    #expect(((bx * by) % bz).hex == remainder)
    #expect((bx * by + bz - bz) == bx * by)
    #expect(BigUInt(hex: "00ff")?.hex == "ff")
    #expect(BigUInt(hex: "xyz") == nil)
    #expect(BigUInt(bytes: [0x01, 0x00]).hex == "100")
    #expect(BigUInt(7).power(.zero, modulus: BigUInt(11)) == BigUInt(1))
    #expect(BigUInt(7).power(BigUInt(3), modulus: BigUInt(10)) == .zero) // even modulus: refused, zero
}

/// RFC 5054's 3072-bit group as Cognito uses it: N's size and ends, g = 2, k = H(padHex(N) ‖ padHex(g)).
@Test func groupConstants() {
    #expect(CognitoSRP.N.bitWidth == 3072)
    #expect(CognitoSRP.N.hex.hasPrefix("ffffffffffffffffc90fdaa22168c234"))
    #expect(CognitoSRP.N.hex.hasSuffix("a93ad2caffffffffffffffff"))
    #expect(CognitoSRP.k.hex == "538282c4354742d7cbbde2359fcf67f9f5b3a6b08791e5011b43b8a5b66d9ee6")
    #expect(CognitoSRP.padded(BigUInt(2)) == [2])
    #expect(CognitoSRP.padded(BigUInt(0x80)) == [0, 0x80])
    #expect(CognitoSRP.padded(.zero) == [0])
    #expect(CognitoSRP.poolName("us-west-2_NqkuZcXQY") == "NqkuZcXQY")
}

/// The whole claim (A and PASSWORD_CLAIM_SIGNATURE) against pycognito 2024.5.1 with a fixed secret `a`
/// and timestamp (generated once with `AWSSRP.process_challenge`; the CI check runs pycognito live).
@Test func claimSignatureMatchesPycognito() throws {
    let a = try #require(BigUInt(hex: String(repeating: "a1b2c3d4e5f60718293a4b5c6d7e8f90", count: 8)))
    let A = CognitoSRP.publicKey(secret: a)
    #expect(A.hex == "319de7c59b46d165608c21962459554324e58b8bf38e063bc026b6a0d1bd756bc13d4412b7c5dc0d62e617d2634098ceb0b8bd9db7baeee8ef1d1d0b297a5e36d5fe014a06dddba54ec10e1907d841566d1faf8772f9e5272e080da3314b015587a66229404fdccba681aa355704577be097060f596b97a62306d1011cbd33e61de392c34aab3b7b1aaa59b357e398a26c3f41cc98a3233c85cf91fa70c9e32affba00dbe4c762887bd4f5ae3a8356859acc01e3d156ab2a6846f03e65ca7f594070f66d9510d6cf4a7f322a89577e8009efe50bd260fea04bdf518c045f2d3718eacb2d78d747cdf2844586b10e64f1b1b4afca1f05dcd341a1291c94d8c477ac32b4f83d32571965db0800afc7429ebd6e0c01c1eeb19a94fbc1c10760d0c8d45805edfda26feecc8c9d97cfc1dc84a76c95021ad1569139a9fcba78ea118141551d4ef5c66b8cdfef5043d095ce3fcd8ca63a933c9434e6b47f5b15d9d9186073a008640b46aab1c74f2a9bf36e0ddc8a1bce28747e14d35401d30877c3da")
    let B = try #require(BigUInt(hex: "4dfba5386c17121736f3d9d373ae5dfb3ddff08766318bb325f8df088b2529a05edb5c516d79d71563bffcc41b7d6c34a5ed4d079597f43cb23407bfdd672bf72907a7de45a06d57fd445b4befafa44139e2427de33f9df740d5d756fbd1ced3a172b34a3f815ce75eea41b4092bd538a4b1f776c663c52c1986c5dceb079000b3856c33973e01018bffdd407a297eb667a30d7d6731a93f98433471998034282b6de8423ea69a395568e09d39c8dbd68a1b35fd5991d6ba0e2613868528f8e3cf135f9858e23dc424a39165996ee000de4165b8d31e9ead6aab228b9471b582724c79a68b43bf48eaa9cf6a3cecc6f067d3877091f7598e855393ddf06e90cf5316f4511f8422088c1b9e4bbe41d74845751f64c7cecc3d3541f3d4e778c1a203c99d22bf4d7f07cfb6ecc0a4ed4a7c7627a4400a5a9c7f765325c5f1147794ece2483f60aba2fa3defed81d978aded6cb2b9291d8b45c64cd9f9fe08f1913c9222a7d8f54d2944cbb8e3e14ecb223603b3ec1f269dade9fd18c7bdf85cb7b8"))
    let salt = try #require(BigUInt(hex: "5f3a9c0d1e2b4a6f8e7d6c5b4a392817"))
    let userID = "0b7f8a3e-1234-4c5d-9e8f-a1b2c3d4e5f6"
    let key = try #require(CognitoSRP.clientKey(a: a, A: A, B: B, salt: salt, poolName: "NqkuZcXQY", userID: userID, password: "Pa55 wörd!"))
    let block = try #require(Data(base64Encoded: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+PwABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4fICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8AAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAhIiMkJSYnKCkqKywtLi8wMTIzNDU2Nzg5Ojs8PT4/"))
    let signature = CognitoSRP.claimSignature(key: key, poolName: "NqkuZcXQY", userID: userID, secretBlock: Array(block),
                                              timestamp: "Sat Sep 5 09:03:07 UTC 2026")
    #expect(Data(signature).base64EncodedString() == "BOKJQXYZB4YzNAyaY5cG39w9RePxa7tTpWYIZAPVJd4=")
}

/// The emulator's side agrees with the client's: the same key from (b, v) as from (a, password), and a
/// different key for a wrong password.
@Test func serverAndClientAgree() throws {
    let salt = try #require(BigUInt(hex: "1f2e3d4c5b6a79880123456789abcdef"))
    let v = CognitoSRP.verifier(salt: salt, poolName: "Pool", userID: "user-id", password: "secret")
    let a = CognitoSRP.randomSecret(), b = CognitoSRP.randomSecret()
    let A = CognitoSRP.publicKey(secret: a)
    let B = CognitoSRP.serverPublicKey(b: b, verifier: v)
    let server = try #require(CognitoSRP.serverKey(b: b, B: B, A: A, verifier: v))
    let client = try #require(CognitoSRP.clientKey(a: a, A: A, B: B, salt: salt, poolName: "Pool", userID: "user-id", password: "secret"))
    #expect(server == client)
    let wrong = try #require(CognitoSRP.clientKey(a: a, A: A, B: B, salt: salt, poolName: "Pool", userID: "user-id", password: "Secret"))
    #expect(server != wrong)
    #expect(CognitoSRP.serverKey(b: b, B: B, A: CognitoSRP.N, verifier: v) == nil)
    #expect(CognitoSRP.clientKey(a: a, A: A, B: CognitoSRP.N * BigUInt(2), salt: salt, poolName: "P", userID: "u", password: "p") == nil)
}

/// The Montgomery exponentiation (squaring kernel, masked windows, the doubling path for base 2) against
/// plain square-and-multiply with schoolbook products and long-division remainders, on random odd moduli of
/// 1 to 9 limbs and exponents of 1 or 2 limbs, with bases below, equal to and above the modulus.
@Test func montgomeryPowerMatchesSquareAndMultiply() throws {
    var random = SplitMix64(state: 0x5EED_CAFE)
    func number(limbs: Int) -> BigUInt { BigUInt(limbs: (0..<limbs).map { _ in random.next() }) }
    func reference(_ base: BigUInt, _ exponent: BigUInt, _ modulus: BigUInt) -> BigUInt {
        var result = BigUInt(1) % modulus, square = base % modulus
        for i in 0..<exponent.bitWidth {
            if exponent.bit(i) { result = (result * square) % modulus }
            square = (square * square) % modulus
        }
        return result
    }
    for round in 0..<27 {
        let size = 1 + round % 9
        var modulus = number(limbs: size)
        if !modulus.bit(0) { modulus = modulus + BigUInt(1) }
        if modulus.limbs.count < size || modulus < BigUInt(3) { continue }
        if round % 3 == 0 { modulus = BigUInt(limbs: [UInt64](repeating: .max, count: size)) } // the top-heavy shape of RFC 5054's N
        let exponent = number(limbs: 1 + round % 2)
        let bases = [BigUInt(2), number(limbs: size) % modulus, modulus + BigUInt(5), modulus - BigUInt(1), .zero]
        for base in bases {
            #expect(base.power(exponent, modulus: modulus) == reference(base, exponent, modulus), "round \(round), base \(base.hex)")
        }
    }
}

/// In the 3072-bit group: the doubling path (base 2) and the general path (base N + 2) agree, and
/// Fermat's little theorem holds for N (a prime).
@Test func groupPowersAgree() throws {
    let N = CognitoSRP.N
    let exponent = try #require(BigUInt(hex: String(repeating: "c3a5f00f9e1d2b47", count: 16)))
    #expect(CognitoSRP.power(CognitoSRP.g, exponent) == CognitoSRP.power(N + BigUInt(2), exponent))
    #expect(CognitoSRP.power(CognitoSRP.g, N - BigUInt(1)) == BigUInt(1))
    let base = try #require(BigUInt(hex: "1234567890abcdef1234567890abcdef"))
    #expect(CognitoSRP.power(base, N - BigUInt(1)) == BigUInt(1))
    #expect(CognitoSRP.power(base, BigUInt(1)) == base)
}
