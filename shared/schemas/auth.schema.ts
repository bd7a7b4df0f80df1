/** Request schemas of the sign-in routes (decisions.md section 8). A new password's length is checked by shared/auth/passwords.ts. */
export const loginSchema = {
  $id: 'LoginRequest',
  type: 'object',
  additionalProperties: false,
  required: ['email', 'password'],
  properties: {
    email: { type: 'string', minLength: 1, maxLength: 320 },
    password: { type: 'string', maxLength: 4096 },
  },
} as const;

export const redeemTokenSchema = {
  $id: 'RedeemTokenRequest',
  type: 'object',
  additionalProperties: false,
  required: ['token', 'password'],
  properties: {
    token: { type: 'string', minLength: 1, maxLength: 200, description: 'The token of the invite or reset link (after `#token=`)' },
    password: { type: 'string', maxLength: 4096, description: 'The new password: 10 to 256 characters' },
  },
} as const;

export interface LoginBody {
  email: string;
  password: string;
}
export interface RedeemTokenBody {
  token: string;
  password: string;
}
