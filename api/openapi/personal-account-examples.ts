import { EXAMPLE_TIME as T, type OperationExamples } from './examples';

/** Examples of the personal account's routes (decisions.md section 8): sign-in, members, activity. */

const USER_ID = 'usr_01JDQ3SX4N6P8Q0R2S4T6U8V0W';
const MEMBER_ID = 'usr_01JDQ3W8M2N4P6Q8R0S2T4U6V8';
const signedIn = {
  user: { id: USER_ID, email: 'anna@example.com', role: 'owner' },
  organization: { id: 'org_01JDQ3RW2X4Y6Z8A0B2C4D6E8F', name: 'Acme' },
  csrfToken: 'q2Rk8m1Yb3Lw0cT5nV7xZ9aE4gJ6hK8pS1uW3yB5dF7',
};
const member = {
  id: MEMBER_ID,
  email: 'boris@example.com',
  role: 'member',
  status: 'invited',
  limit: 500,
  limitReset: 'monthly',
  limitRemaining: 500,
  createdAt: T,
};
const INVITE = 'syi_3fWm8Qd1Lr0Xc7Vn2Kb5Jt9Gy4Hp6Az8Ue1Ts3Rq5Po';

export const PERSONAL_ACCOUNT_EXAMPLES: Record<string, OperationExamples> = {
  'POST /v1/auth/login': { request: { email: 'anna@example.com', password: 'correct horse battery' }, response: signedIn },
  'POST /v1/auth/invite': { request: { token: INVITE, password: 'correct horse battery' }, response: signedIn },
  'POST /v1/auth/reset': { request: { token: 'syr_8Kd2Lw5Mq1Xr7Cv0Bn3Jt6Gy9Hp4Az2Ue5Ts8Rq1Po', password: 'a new long password' }, response: signedIn },
  'GET /v1/auth/session': { response: signedIn },
  'POST /v1/auth/logout': { response: undefined },

  'GET /v1/members': { response: { data: [{ ...member, id: USER_ID, email: 'anna@example.com', role: 'owner', status: 'active', limit: null, limitReset: null, limitRemaining: null }, member] } },
  'POST /v1/members': {
    request: { email: 'boris@example.com', role: 'member', limit: 500, limit_reset: 'monthly' },
    response: { ...member, inviteToken: INVITE, inviteUrl: `http://localhost:3000/console/invite#token=${INVITE}` },
  },
  'PATCH /v1/members/{id}': { request: { role: 'admin', limit: 1000 }, response: { ...member, role: 'admin', status: 'active', limit: 1000, limitRemaining: 987.25 } },
  'DELETE /v1/members/{id}': { response: { id: MEMBER_ID, deleted: true } },

  'GET /v1/activity': {
    query: { days: 30, api_key_id: 'key_01JDQ3TZ2B4C6D8E0F2G4H6J8K' },
    response: {
      data: [
        { date: '2026-11-24', model: 'openai/gpt-4.1-mini', provider_name: 'openai', endpoint_id: 'openai/gpt-4.1-mini:openai', usage: 4.2135, requests: 1250, prompt_tokens: 812000, completion_tokens: 201500, reasoning_tokens: 0, cached_tokens: 120000 },
        { date: '2026-11-23', model: 'anthropic/claude-sonnet-4', provider_name: 'anthropic', endpoint_id: 'anthropic/claude-sonnet-4:anthropic', usage: 12.75, requests: 310, prompt_tokens: 402000, completion_tokens: 98000, reasoning_tokens: 15000, cached_tokens: 0 },
      ],
    },
  },
};
