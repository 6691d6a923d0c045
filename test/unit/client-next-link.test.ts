/** The client's reading of a page's Link field (RFC 8288): only a link-value whose rel has "next" is followed. */
import t from 'tap'
import { nextPageUrl } from '../../client/conditional.js'
import { UnexpectedResponseError } from '../../client/errors.js'

const BASE = 'http://store.example/api'
const PAGE = `${BASE}/plants?limit=2`
const next = (link?: string) => nextPageUrl(new Response('[]', { headers: link === undefined ? {} : { link } }), PAGE, BASE)

t.test('the next page among the forms RFC 8288 allows', async (t) => {
  t.equal(next('</api/plants?limit=2&after=2>; rel="next"'), '/plants?limit=2&after=2')
  t.equal(next('</api/plants?after=2>;rel=next'), '/plants?after=2', 'a token, no spaces')
  t.equal(next('</api/plants?after=2>; REL="Next"'), '/plants?after=2', 'names and types are case-insensitive')
  t.equal(next('</api/plants?after=2>; title="page 2"; rel="next last"'), '/plants?after=2', 'rel after another parameter, with two types')
  t.equal(next('</api/plants?after=0>; rel="prev", </api/plants?after=4>; rel="next"'), '/plants?after=4', 'the link-value that is next')
  t.equal(next('<plants?after=2>; rel="next"'), '/plants?after=2', 'relative to the page')
})

t.test('no next page', async (t) => {
  t.equal(next(), undefined, 'no Link')
  t.equal(next('</api/plants?after=0>; rel="prev"'), undefined, 'another relation')
  t.equal(next('</api/plants?after=2>; rel="nextpage"'), undefined, 'a type that only starts with next')
  t.equal(next('</api/plants?after=2>; title="rel=next"'), undefined, 'next inside another parameter')
  t.equal(next('</api/plants?after=2>; rel'), undefined, 'a rel without a value')
  t.equal(next('</api/plants?after=2>; rel="prev"; rel="next"'), undefined, 'only the first rel counts (RFC 8288 3.3)')
  t.equal(next('not a link'), undefined)
})

t.test('a next page outside baseUrl is refused: the token goes nowhere else', async (t) => {
  t.throws(() => next('<http://elsewhere.example/api/plants?after=2>; rel="next"'), UnexpectedResponseError)
  t.throws(() => next('</apix/plants?after=2>; rel="next"'), UnexpectedResponseError, 'a path that only starts like baseUrl')
})
