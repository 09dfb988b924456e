// Contract: "The answer from HOST:PORT broke off" names a connection lost after the answer's head arrived, and only
// that. An answer whose head arrived but whose body cannot be read (a content coding that is corrupt, a chunked body
// that does not parse) did not break off: it is named an answer that cannot be read, and stays a malformed answer
// (never retried). A timeout or a cancel after the head keeps its own code; a connection lost after the head is
// still an answer that broke off, and one lost before it still failed before FileMaker answered.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

@Suite struct AnswerBrokeOffCauseRuleTests {
    private let url = URL(string: "https://fm.example.com/fmi/data/vLatest/databases/Music/layouts/Artists/records")

    private func urlError(_ code: URLError.Code, _ words: String) -> URLError {
        URLError(code, userInfo: [NSLocalizedDescriptionKey: words])
    }

    @Test func aCorruptContentCodingAfterTheHeadIsNotAnAnswerThatBrokeOff() {
        let error = FMError.fromTransport(urlError(.cannotDecodeContentData, "curl 61: Error while processing content unencoding"),
                                          url: url, answerStarted: true)
        #expect(error.code == FMError.ClientCode.transport)
        #expect(!error.message.contains("broke off"), "\(error.message)")
        #expect(!error.message.contains("before FileMaker answered"), "\(error.message)")
        #expect(error.message.contains("fm.example.com:443"), "\(error.message)")
        #expect(error.isMalformedAnswer)
    }

    @Test func aChunkedBodyThatDoesNotParseAfterTheHeadIsNotAnAnswerThatBrokeOff() {
        let error = FMError.fromTransport(urlError(.cannotParseResponse, "curl 56: invalid chunk length"),
                                          url: url, answerStarted: true)
        #expect(!error.message.contains("broke off"), "\(error.message)")
        #expect(error.isMalformedAnswer)
    }

    @Test func aConnectionLostAfterTheHeadIsAnAnswerThatBrokeOff() {
        let error = FMError.fromTransport(urlError(.networkConnectionLost, "curl 18: transfer closed with 10 bytes remaining"),
                                          url: url, answerStarted: true)
        #expect(error.message.hasPrefix("The answer from fm.example.com:443 broke off"), "\(error.message)")
        #expect(!error.isMalformedAnswer)
    }

    @Test func aConnectionLostBeforeTheHeadFailedBeforeFileMakerAnswered() {
        let error = FMError.fromTransport(urlError(.networkConnectionLost, "curl 52: Empty reply from server"), url: url)
        #expect(error.message.contains("failed before FileMaker answered"), "\(error.message)")
    }

    @Test func aTimeoutOrACancelAfterTheHeadKeepsItsCode() {
        let timeout = FMError.fromTransport(urlError(.timedOut, "curl 28"), url: url, answerStarted: true)
        #expect(timeout.code == FMError.ClientCode.timeout)
        let cancelled = FMError.fromTransport(urlError(.cancelled, "cancelled"), url: url, answerStarted: true)
        #expect(cancelled.code == FMError.ClientCode.cancelled)
    }
}
