import t from 'tap'
import { exactInteger, parseJsonBody } from '../plugins/json-body.js'

t.test('exactInteger reads every spelling of an integer exactly', async (t) => {
  const cases: Array<[string, bigint | undefined]> = [
    ['0', 0n], ['-0', 0n], ['42', 42n], ['-42', -42n], ['1.0', 1n], ['1.50', undefined], ['1e3', 1000n],
    ['1E-0', 1n], ['2.5e1', 25n], ['25e-1', undefined], ['2500e-2', 25n], ['0.0e-99999', 0n],
    ['9223372036854775807', 9223372036854775807n], ['9223372036854775808', 9223372036854775808n],
    ['123456789012345678901', undefined], ['1e19', 10000000000000000000n], ['1e20', undefined],
    ['1e999999999999', undefined], ['1e-999999999999', undefined], ['0e999999999999', 0n], ['abc', undefined]
  ]
  for (const [literal, expected] of cases) t.equal(exactInteger(literal), expected, literal)
})

t.test('parseJsonBody keeps long integers exact and leaves short ones to the native parser', async (t) => {
  t.same(parseJsonBody(Buffer.from('{"id":12,"name":"x"}')), { id: 12, name: 'x' })
  t.same(parseJsonBody(Buffer.from('{"id":9007199254740993,"name":"x"}')), { id: 9007199254740993n, name: 'x' })
  const fraction = parseJsonBody(Buffer.from('{"id":1.5}')) as { id: unknown }
  t.not(typeof fraction.id, 'bigint', 'a fraction is never an integer')
  t.same(parseJsonBody(Buffer.from('[1, "a", null]')), [1, 'a', null])
  t.equal(parseJsonBody(Buffer.from('7')), 7)
})
