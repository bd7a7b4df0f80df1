/** Request schemas of the member routes (decisions.md section 8). */
const money = { type: ['number', 'string', 'null'], pattern: '^\\d{1,15}(\\.\\d+)?$', maxLength: 64, minimum: 0, maximum: 999_999_999_999_999 } as const;
const limitReset = { enum: ['daily', 'weekly', 'monthly', 'never', null] } as const;
const role = { enum: ['owner', 'admin', 'member'] } as const;

export const createMemberSchema = {
  $id: 'CreateMemberRequest',
  type: 'object',
  additionalProperties: false,
  required: ['email', 'role'],
  properties: {
    email: { type: 'string', pattern: '^[^\\s@]+@[^\\s@]+$', maxLength: 320 },
    role: { ...role, description: 'Owner: any role; admin: admin or member' },
    limit: { ...money, description: 'Personal spending limit, RUB (null: none)' },
    limit_reset: limitReset,
  },
} as const;

export const updateMemberSchema = {
  $id: 'UpdateMemberRequest',
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    role,
    limit: { ...money, description: 'Personal spending limit, RUB (null: none)' },
    limit_reset: limitReset,
  },
} as const;

type Role = 'owner' | 'admin' | 'member';
type Reset = 'daily' | 'weekly' | 'monthly' | 'never' | null;
export interface CreateMemberBody {
  email: string;
  role: Role;
  limit?: number | string | null;
  limit_reset?: Reset;
}
export interface UpdateMemberBody {
  role?: Role;
  limit?: number | string | null;
  limit_reset?: Reset;
}
