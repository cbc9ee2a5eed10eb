/** HTTP methods no route serves, which once reached the router's 501 as a 500 (issue 17 §3). */
export const UNUSUAL_METHODS = [
  'TRACE',
  'PROPFIND',
  'SEARCH',
  'PURGE',
  'LINK',
  'MKCOL',
  'REPORT',
  'LOCK',
  'COPY',
  'MOVE',
  'QUERY',
];
