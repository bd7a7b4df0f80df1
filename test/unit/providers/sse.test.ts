import { parseSse, SseParser } from '../../../shared/providers/api';

describe('SSE parser', () => {
  it('joins multi-line data, keeps event names and ignores comments', () => {
    expect(parseSse(': keep-alive\n\nevent: message_start\ndata: {"a":\ndata: 1}\n\ndata:no-space\n\n')).toEqual([
      { event: 'message_start', data: '{"a":\n1}' },
      { data: 'no-space' },
    ]);
  });

  it('handles CRLF and lone CR line endings', () => {
    expect(parseSse('data: one\r\n\r\ndata: two\r\rdata: three\n\n')).toEqual([{ data: 'one' }, { data: 'two' }, { data: 'three' }]);
  });

  it('reads LF lines before and after a CR in one chunk (the CR found once, then searched again past it)', () => {
    expect(parseSse('data: a\ndata: b\n\ndata: c\r\n\r\ndata: d\n\ndata: e\rdata: f\n\n')).toEqual([{ data: 'a\nb' }, { data: 'c' }, { data: 'd' }, { data: 'e\nf' }]);
  });

  it('assembles events split anywhere, even inside CRLF and a UTF-8 character', () => {
    const bytes = Buffer.from('event: delta\r\ndata: {"text":"héllo ✓"}\r\n\r\ndata: [DONE]\r\n\r\n', 'utf8');
    for (let size = 1; size <= 6; size++) {
      const parser = new SseParser();
      const events = [];
      for (let i = 0; i < bytes.length; i += size) events.push(...parser.push(bytes.subarray(i, i + size)));
      events.push(...parser.end());
      expect(events).toEqual([{ event: 'delta', data: '{"text":"héllo ✓"}' }, { data: '[DONE]' }]);
    }
  });

  it('does not emit an event before its blank line, and flushes an unterminated one at the end', () => {
    const parser = new SseParser();
    expect(parser.push('data: a\n')).toEqual([]);
    expect(parser.push('\ndata: [DONE]')).toEqual([{ data: 'a' }]);
    expect(parser.end()).toEqual([{ data: '[DONE]' }]);
  });

  it('skips events without data, a BOM and the id field', () => {
    expect(parseSse('\uFEFFevent: ping\n\nid: 7\ndata: x\n\n')).toEqual([{ data: 'x', id: '7' }]);
  });
});
